#pragma once
#include <cstdint>
#include <string_view>

namespace inferlab {

// SplitMix64 (Steele, Lea, Flood 2014): seeds the generators and mixes hashes.
inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// 64-bit FNV-1a of a string (tensor names → per-tensor seeds).
inline uint64_t fnv1a64(std::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

// xoshiro256** 1.0 (Blackman, Vigna), state filled from SplitMix64 of the seed. The one random
// generator of the engine: weight init and sampling.
class Xoshiro256 {
 public:
  explicit Xoshiro256(uint64_t seed) {
    for (auto& word : state_) word = splitmix64(seed);
  }
  uint64_t next() {
    uint64_t result = rotl(state_[1] * 5, 7) * 9;
    uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Approximately standard normal: the sum of four uniform 16-bit integers (Irwin-Hall, n = 4)
  // centred and scaled to unit variance; bounded at ±3.46. One generator step per value, which
  // is what lets init-weights stream 8 billion values quickly.
  float approx_normal() {
    uint64_t r = next();
    int64_t sum = static_cast<int64_t>(r & 0xffff) + static_cast<int64_t>((r >> 16) & 0xffff) +
                  static_cast<int64_t>((r >> 32) & 0xffff) + static_cast<int64_t>(r >> 48);
    // mean 4 * 32767.5; variance 4 * (65536^2 - 1) / 12.
    constexpr double kMean = 4 * 32767.5;
    constexpr double kInvStd = 1.0 / 37837.2267;  // sqrt(4 * (65536^2 - 1) / 12)
    return static_cast<float>((static_cast<double>(sum) - kMean) * kInvStd);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t state_[4];
};

}  // namespace inferlab
