#include "serve/block_keys.hpp"

namespace inferlab {

namespace {
// 64-bit FNV-1a over the previous key and the block's values, finished with a splitmix64 mix
// (FNV alone leaves the high bits weak).
uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class ChainHasher {
 public:
  explicit ChainHasher(uint64_t previous) { add(previous); }
  void add(uint64_t value) {
    for (int byte = 0; byte < 8; ++byte) {
      hash_ ^= (value >> (8 * byte)) & 0xff;
      hash_ *= 0x100000001b3ULL;
    }
  }
  uint64_t key() const { return mix64(hash_); }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ULL;
};

constexpr uint64_t kChainStart = 0x5851f42d4c957f2dULL;
}  // namespace

std::vector<uint64_t> token_block_keys(std::span<const int32_t> tokens, int64_t block_size) {
  std::vector<uint64_t> keys;
  if (block_size < 1) return keys;
  uint64_t previous = kChainStart;
  const auto full = static_cast<int64_t>(tokens.size()) / block_size;
  for (int64_t b = 0; b < full; ++b) {
    ChainHasher hasher(previous);
    for (int64_t t = 0; t < block_size; ++t) {
      hasher.add(static_cast<uint32_t>(tokens[static_cast<size_t>(b * block_size + t)]));
    }
    previous = hasher.key();
    keys.push_back(previous);
  }
  return keys;
}

std::vector<uint64_t> prefix_block_keys(int64_t prefix_id, int64_t blocks) {
  std::vector<uint64_t> keys;
  uint64_t previous = kChainStart ^ mix64(static_cast<uint64_t>(prefix_id) + 1);
  for (int64_t b = 0; b < blocks; ++b) {
    ChainHasher hasher(previous);
    hasher.add(static_cast<uint64_t>(prefix_id));
    hasher.add(static_cast<uint64_t>(b));
    previous = hasher.key();
    keys.push_back(previous);
  }
  return keys;
}

}  // namespace inferlab
