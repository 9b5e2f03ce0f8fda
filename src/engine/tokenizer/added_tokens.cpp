#include "engine/tokenizer/added_tokens.hpp"

#include <algorithm>

#include "engine/tokenizer/utf8.hpp"

namespace inferlab::engine {

namespace {
bool is_white_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}
bool is_word(char32_t c) {
  if (c < 0x80)
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
  return !is_white_space(c);
}
// The character that ends at `end` (0 if none or not valid UTF-8).
char32_t char_before(std::string_view text, size_t end) {
  for (size_t n = 1; n <= 4 && n <= end; ++n) {
    if (utf8_sequence_length(text, end - n) == n) return utf8_decode_at(text, end - n, n);
  }
  return 0;
}
char32_t char_at(std::string_view text, size_t pos) {
  size_t n = utf8_sequence_length(text, pos);
  return n ? utf8_decode_at(text, pos, n) : 0;
}
}  // namespace

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens) : tokens_(tokens) {
  nodes_.emplace_back();
  for (size_t t = 0; t < tokens_.size(); ++t) {
    int32_t node = 0;
    const std::string& content = tokens_[t].content;
    for (auto it = content.rbegin(); it != content.rend(); ++it) {
      auto byte = static_cast<unsigned char>(*it);
      int32_t next = child(node, byte);
      if (next < 0) {
        next = static_cast<int32_t>(nodes_.size());
        nodes_.emplace_back();
        auto& edges = nodes_[node].next;
        edges.insert(std::lower_bound(edges.begin(), edges.end(), std::make_pair(byte, 0)),
                     {byte, next});
      }
      node = next;
    }
    // Two added tokens with the same text: the first one listed wins.
    if (nodes_[node].token < 0) nodes_[node].token = static_cast<int32_t>(t);
  }
  // Failure links breadth first; a node's own token is the longest suffix token it has.
  std::vector<int32_t> queue{0};
  for (size_t head = 0; head < queue.size(); ++head) {
    int32_t u = queue[head];
    for (auto [byte, v] : nodes_[u].next) {
      int32_t f = nodes_[u].fail;
      while (u != 0 && f != 0 && child(f, byte) < 0) f = nodes_[f].fail;
      int32_t target = u == 0 ? -1 : child(f, byte);
      nodes_[v].fail = target >= 0 ? target : 0;
      nodes_[v].longest = nodes_[v].token >= 0 ? nodes_[v].token : nodes_[nodes_[v].fail].longest;
      queue.push_back(v);
    }
  }
}

int32_t AddedTokenMatcher::child(int32_t node, unsigned char byte) const {
  const auto& edges = nodes_[node].next;
  auto it = std::lower_bound(edges.begin(), edges.end(), std::make_pair(byte, 0));
  return it != edges.end() && it->first == byte ? it->second : -1;
}

std::vector<TextSpan> AddedTokenMatcher::split(std::string_view text) const {
  std::vector<TextSpan> spans;
  if (tokens_.empty()) {
    if (!text.empty()) spans.push_back({0, text.size(), -1});
    return spans;
  }
  // The longest token starting at each position: the reversed text through the automaton.
  std::vector<int32_t> longest_at(text.size(), -1);
  int32_t state = 0;
  for (size_t i = text.size(); i-- > 0;) {
    auto byte = static_cast<unsigned char>(text[i]);
    while (state != 0 && child(state, byte) < 0) state = nodes_[state].fail;
    int32_t next = child(state, byte);
    state = next >= 0 ? next : 0;
    longest_at[i] = nodes_[state].longest;
  }
  size_t plain_start = 0, pos = 0;
  while (pos < text.size()) {
    int32_t best = longest_at[pos];
    if (best < 0) {
      ++pos;
      continue;
    }
    size_t best_end = pos + tokens_[best].content.size();
    const AddedToken& token = tokens_[best];
    size_t start = pos, stop = best_end;
    if (token.single_word && ((start > 0 && is_word(char_before(text, start))) ||
                              (stop < text.size() && is_word(char_at(text, stop))))) {
      pos = best_end;  // not a word of its own; the matcher has moved past it
      continue;
    }
    if (token.lstrip) {
      while (start > plain_start) {
        char32_t c = char_before(text, start);
        if (!is_white_space(c)) break;
        size_t n = 1;
        while (utf8_sequence_length(text, start - n) != n) ++n;
        start -= n;
      }
    }
    if (token.rstrip) {
      while (stop < text.size() && is_white_space(char_at(text, stop))) {
        stop += utf8_sequence_length(text, stop);
      }
    }
    if (start > plain_start) spans.push_back({plain_start, start, -1});
    spans.push_back({start, stop, token.id});
    plain_start = pos = stop;
  }
  if (plain_start < text.size()) spans.push_back({plain_start, text.size(), -1});
  return spans;
}

}  // namespace inferlab::engine
