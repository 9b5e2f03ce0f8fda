#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/tokenizer/tokenizer_file.hpp"

namespace inferlab::engine {

// A stretch of input: either an added token (id >= 0) or plain text for the pre-tokenizer.
struct TextSpan {
  size_t begin, end;
  int32_t token_id;  // -1 for plain text
};

// Finds added tokens in text as Hugging Face's AddedVocabulary does: leftmost-longest,
// non-overlapping literal matches (Aho-Corasick over the reversed text and tokens gives the
// longest token starting at each position: O(n) whatever the tokens), then each token's
// single_word, lstrip and rstrip options. Whitespace for lstrip/rstrip is Unicode
// White_Space; "word" characters for single_word are ASCII letters, digits, '_' and any
// non-ASCII character that is not whitespace.
class AddedTokenMatcher {
 public:
  explicit AddedTokenMatcher(const std::vector<AddedToken>& tokens);

  // Cuts text into spans covering it in order, none empty.
  std::vector<TextSpan> split(std::string_view text) const;
  bool empty() const { return tokens_.empty(); }

 private:
  // A node of the automaton over reversed token texts.
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> next;  // sorted by byte
    int32_t token = -1;    // the token whose reversed text ends here (index into tokens_)
    int32_t fail = 0;      // the longest proper suffix that is also a node
    int32_t longest = -1;  // the longest token that is a suffix of this node's text
  };
  int32_t child(int32_t node, unsigned char byte) const;
  std::vector<Node> nodes_;
  std::vector<AddedToken> tokens_;
};

}  // namespace inferlab::engine
