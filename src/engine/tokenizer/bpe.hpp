#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/tokenizer/tokenizer_file.hpp"

namespace inferlab::engine {

// The BPE model over byte-level text: a word (one pre-token, already mapped byte -> code
// point) becomes ids by applying merges lowest rank first, leftmost first among equals, as
// Hugging Face tokenizers does (a heap of candidate pairs over a linked list of symbols:
// O(n log n) for a word of n characters). Words up to kCachedWordBytes are cached.
class BpeModel {
 public:
  static constexpr size_t kCachedWordBytes = 256;
  static constexpr size_t kCacheEntries = 1 << 16;

  // Checks that every merge names known tokens and yields a known token, and that every
  // byte of the byte-level alphabet is a token; InputError otherwise.
  BpeModel(const TokenizerSpec& spec, const std::string& context);

  // Appends the ids of one byte-level word.
  void encode_word(std::string_view word, std::vector<int32_t>& ids) const;

  // The model's token for an id (byte-level text), or nullptr.
  const std::string* token(int32_t id) const;
  int32_t find(std::string_view token) const;  // -1 if absent
  size_t vocab_size() const { return vocab_.size(); }
  int32_t max_id() const { return static_cast<int32_t>(id_to_token_.size()) - 1; }

 private:
  struct Merge {
    int32_t rank, new_id;
  };
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (uint64_t(uint32_t(a)) << 32) | uint32_t(b);
  }
  void merge_word(std::string_view word, std::vector<int32_t>& ids) const;

  std::unordered_map<std::string, int32_t> vocab_;
  std::vector<std::string> id_to_token_;
  std::unordered_map<uint64_t, Merge> merges_;
  bool ignore_merges_ = false;
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace inferlab::engine
