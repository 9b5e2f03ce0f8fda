#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace inferlab::engine {

// Bounds on what a tokenizer.json may hold (real ones: Llama 3 9 MB, 128k tokens, 280k merges).
inline constexpr uint64_t kMaxTokenizerFileBytes = uint64_t{64} << 20;
inline constexpr int64_t kMaxTokenId = (int64_t{1} << 22) - 1;
inline constexpr size_t kMaxTokenBytes = 4096;

// One entry of tokenizer.json's "added_tokens": matched in the text before anything else.
struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;
  bool single_word = false, lstrip = false, rstrip = false, normalized = false;
};

// What inferlab takes from a Hugging Face tokenizer.json (byte-level BPE only), checked for
// shape but not yet for consistency (the BPE model checks merges against the vocab).
struct TokenizerSpec {
  std::unordered_map<std::string, int32_t> vocab;           // the model's tokens
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  bool ignore_merges = false;  // a word that is a whole token is taken as is (Llama 3)
  bool normalize_nfc = false;  // the normalizer is NFC (Qwen2, Qwen3); none otherwise
  std::vector<AddedToken> added_tokens;
  // The pre-tokenizer: regexes applied one after another (each splits the pieces of the
  // previous one, HF's Split with "Isolated"), then the byte-level mapping.
  std::vector<std::string> split_patterns;
  bool add_prefix_space = false;  // ByteLevel's: a space before each segment lacking one
  std::optional<int32_t> bos_id;  // from the post-processor's template, if it adds one
};

// Parses tokenizer.json text; `context` names the file in error messages. Malformed or
// unsupported content is an InputError that says what and where.
TokenizerSpec parse_tokenizer_json(std::string_view json_text, const std::string& context);

// Reads a tokenizer.json file (bounded in size) and parses it.
TokenizerSpec read_tokenizer_file(const std::filesystem::path& path);

// GPT-2's pre-tokenizer regex (ByteLevel with use_regex: true).
extern const char* const kGpt2SplitPattern;

}  // namespace inferlab::engine
