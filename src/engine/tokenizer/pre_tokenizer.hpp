#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace inferlab::engine {

// Oniguruma's \s (what Hugging Face tokenizers matches with) is Unicode White_Space; PCRE2's
// \s with UCP adds U+180E. Rewrites \s and \S (outside and inside classes) into explicit
// White_Space classes so PCRE2 splits as HF does. Other syntax passes through.
std::string onig_compatible_pattern(std::string_view pattern);

// One regex split of HF's pre-tokenizer (Split, behavior "Isolated"): the text is cut into
// the regex's matches and the gaps between them, in order, none empty. Matching is Unicode
// (PCRE2_UTF | PCRE2_UCP, JIT where available). Bytes that are not well-formed UTF-8 never
// reach the regex: each maximal run of them is a piece of its own, so any bytes round-trip.
class RegexSplitter {
 public:
  // InputError when the pattern does not compile (`context` names the tokenizer file).
  RegexSplitter(const std::string& pattern, const std::string& context);
  ~RegexSplitter();
  RegexSplitter(const RegexSplitter&) = delete;
  RegexSplitter& operator=(const RegexSplitter&) = delete;

  // Appends the pieces of `text` (views into it). InputError if the regex engine gives up
  // (match or memory limit) on hostile text.
  void split(std::string_view text, std::vector<std::string_view>& pieces) const;

 private:
  void split_valid(std::string_view text, std::vector<std::string_view>& pieces) const;
  struct Code;
  std::unique_ptr<Code> code_;
};

}  // namespace inferlab::engine
