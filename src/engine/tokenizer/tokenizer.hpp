#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace inferlab::engine {

// A Hugging Face byte-level BPE tokenizer (Llama 3, Qwen2, Qwen3), read from tokenizer.json;
// ids identical to HF `tokenizers` with add_special_tokens=False. Encoding: added/special
// tokens first (literal, leftmost-longest), then the normalizer (none or NFC) on the text
// between them, the pre-tokenizer regex, byte -> unicode mapping, merges by rank. Any bytes encode
// (ill-formed UTF-8 is byte-encoded) and decode(encode(x)) == x (NFC(x) where the tokenizer
// normalizes). Thread-safe once built.
class Tokenizer {
 public:
  // About a million tokens, 8x Llama 3.1's context: bounds time and memory on hostile text
  // (one 4 MiB word needs ~100 MB of merge state).
  static constexpr size_t kMaxTextBytes = size_t{4} << 20;

  // Reads tokenizer.json (or, given a folder, the tokenizer.json in it). The BOS is the first
  // special token of the post-processor's template, else tokenizer_config.json's "bos_token"
  // when that file lies beside it. InputError for anything missing, malformed or unsupported.
  static Tokenizer from_file(const std::filesystem::path& path);
  // From tokenizer.json text already in memory; `context` names it in errors.
  static Tokenizer from_json(std::string_view json_text,
                             const std::string& context = "tokenizer.json");

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Text (any bytes) to ids; with add_bos the BOS id first (InputError if there is none).
  // InputError for text over kMaxTextBytes.
  std::vector<int32_t> encode(std::string_view text, bool add_bos = false) const;

  // Ids to bytes: each token's bytes concatenated (special tokens as their text unless
  // skipped). The result may be ill-formed UTF-8 where a sequence was cut between tokens;
  // utf8_lossy() makes it printable. InputError for an id outside the vocabulary.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;
  // The bytes one id decodes to (what decode gives for {id}).
  const std::string& token_bytes(int32_t id) const;

  // The id of a token given as its text: an added token's content ("<|eot_id|>") or a model
  // token's byte-level form ("Ġworld").
  std::optional<int32_t> token_id(std::string_view token) const;
  // An added token's id by its content only.
  std::optional<int32_t> added_token_id(std::string_view content) const;
  bool is_special(int32_t id) const;
  std::optional<int32_t> bos_id() const;
  // One past the largest id (the embedding table needs at least this many rows).
  int32_t vocab_size() const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace inferlab::engine
