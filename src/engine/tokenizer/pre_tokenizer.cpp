#include "engine/tokenizer/pre_tokenizer.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cstdint>

#include "engine/tokenizer/utf8.hpp"
#include "util/error.hpp"

namespace inferlab::engine {

namespace {
// Unicode White_Space: U+0009..U+000D, U+0085 and the separators (Zs, Zl, Zp).
constexpr std::string_view kWhiteSpaceItems = R"(\t-\r\x{85}\p{Z})";

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  if (pcre2_get_error_message(code, buffer, sizeof buffer) < 0)
    return "error " + std::to_string(code);
  return reinterpret_cast<const char*>(buffer);
}
}  // namespace

std::string onig_compatible_pattern(std::string_view pattern) {
  std::string out;
  bool in_class = false;
  size_t class_start = 0;  // where the current class's items begin (after '[' and '^')
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      char e = pattern[i + 1];
      if (e == 'Q') {  // \Q...\E: literal
        size_t end = pattern.find("\\E", i + 2);
        size_t stop = end == std::string_view::npos ? pattern.size() : end + 2;
        out.append(pattern.substr(i, stop - i));
        i = stop - 1;
        continue;
      }
      if (e == 's') {
        if (in_class) {
          out.append(kWhiteSpaceItems);
        } else {
          out += '[';
          out.append(kWhiteSpaceItems);
          out += ']';
        }
        ++i;
        continue;
      }
      if (e == 'S' && !in_class) {
        out += "[^";
        out.append(kWhiteSpaceItems);
        out += ']';
        ++i;
        continue;
      }
      out += c;
      out += e;
      ++i;
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      class_start = i + 1;
      // A ']' right at the start of a class is a literal.
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
      continue;
    }
    if (in_class && c == '[' && i + 1 < pattern.size() && pattern[i + 1] == ':') {
      size_t end = pattern.find(":]", i + 2);  // POSIX class [:alpha:]
      if (end != std::string_view::npos) {
        out.append(pattern.substr(i, end + 2 - i));
        i = end + 1;
        continue;
      }
    }
    if (in_class && c == ']' && i >= class_start) in_class = false;
    out += c;
  }
  return out;
}

struct RegexSplitter::Code {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Code() {
    if (code) pcre2_code_free(code);
  }
};

RegexSplitter::RegexSplitter(const std::string& pattern, const std::string& context)
    : code_(std::make_unique<Code>()) {
  std::string rewritten = onig_compatible_pattern(pattern);
  int error = 0;
  PCRE2_SIZE offset = 0;
  code_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(rewritten.data()), rewritten.size(),
                              PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (!code_->code) {
    throw InputError(context + ": the pre-tokenizer regex does not compile (" +
                     pcre2_message(error) + " at offset " + std::to_string(offset) + ")");
  }
  code_->jit = pcre2_jit_compile(code_->code, PCRE2_JIT_COMPLETE) == 0;
}

RegexSplitter::~RegexSplitter() = default;

void RegexSplitter::split(std::string_view text, std::vector<std::string_view>& pieces) const {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t valid_end = pos;
    while (valid_end < text.size()) {
      size_t n = utf8_sequence_length(text, valid_end);
      if (n == 0) break;
      valid_end += n;
    }
    if (valid_end > pos) split_valid(text.substr(pos, valid_end - pos), pieces);
    size_t invalid_end = valid_end;
    while (invalid_end < text.size() && utf8_sequence_length(text, invalid_end) == 0) {
      ++invalid_end;
    }
    if (invalid_end > valid_end) pieces.push_back(text.substr(valid_end, invalid_end - valid_end));
    pos = invalid_end;
  }
}

void RegexSplitter::split_valid(std::string_view text,
                                std::vector<std::string_view>& pieces) const {
  // The match context and JIT stack are per thread and reused (creating a JIT stack maps
  // memory: too slow for every call); the match data is per call.
  struct ThreadResources {
    pcre2_match_context* context = pcre2_match_context_create(nullptr);
    pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
    ThreadResources() {
      if (context && stack) pcre2_jit_stack_assign(context, nullptr, stack);
    }
    ~ThreadResources() {
      if (context) pcre2_match_context_free(context);
      if (stack) pcre2_jit_stack_free(stack);
    }
  };
  thread_local ThreadResources resources;
  struct MatchData {
    pcre2_match_data* data;
    ~MatchData() {
      if (data) pcre2_match_data_free(data);
    }
  } match{pcre2_match_data_create_from_pattern(code_->code, nullptr)};
  if (!match.data || !resources.context) throw std::bad_alloc();
  pcre2_match_context* context = resources.context;
  bool jit = code_->jit && resources.stack;
  // PCRE2's default limits (10 million backtracking steps) would refuse a few MB of
  // whitespace, which \s*[\r\n]+ scans once per match; allow steps in proportion to the
  // text, still bounding a catastrophic pattern from a hostile tokenizer.json.
  const uint32_t limit = static_cast<uint32_t>(
      std::min<uint64_t>(uint64_t{10'000'000} + uint64_t{64} * text.size(), 0xFFFFFFFFu));
  pcre2_set_match_limit(context, limit);
  pcre2_set_depth_limit(context, limit);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t gap_start = 0, search = 0;
  while (search < text.size()) {
    uint32_t options = PCRE2_NO_UTF_CHECK | (jit ? 0u : PCRE2_NO_JIT);
    int rc = pcre2_match(code_->code, subject, text.size(), search, options, match.data, context);
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH && jit) {
      jit = false;  // JIT stack exhausted: the interpreter keeps its frames on the heap
      continue;
    }
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      throw InputError("the text is too hard for the tokenizer's pre-tokenizer regex at byte " +
                       std::to_string(search) + " (" + pcre2_message(rc) + ")");
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.data);
    size_t start = ovector[0], end = ovector[1];
    if (end == start) {  // an empty match splits nothing: move on one character
      size_t n = utf8_sequence_length(text, start);
      search = start + (n == 0 ? 1 : n);
      continue;
    }
    if (start > gap_start) pieces.push_back(text.substr(gap_start, start - gap_start));
    pieces.push_back(text.substr(start, end - start));
    gap_start = search = end;
  }
  if (gap_start < text.size()) pieces.push_back(text.substr(gap_start));
}

}  // namespace inferlab::engine
