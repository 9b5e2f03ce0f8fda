#pragma once
// The CPU reference of the Projector tests: random weights quantized with quantize_matrix and
// dequantized with dequantize_matrix (the values the matrix stands for), inputs rounded to
// bf16 and, for fp8 / W8A8, quantized per row with quantize_row_e4m3 / quantize_row_int8;
// fp64 dot products; the epilogues' bf16 rounding points. Pure host code.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "engine/bf16.hpp"
#include "engine/quant/quantize.hpp"

namespace inferlab::engine::projection_test {

// Fast uniform randoms (the big matrices have 10^8 weights): splitmix64.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed * 0x9e3779b97f4a7c15ull + 1) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1), never exactly zero.
  float symmetric() {
    const float v = static_cast<float>(next() >> 40) * (1.0f / 8388608.0f) - 1.0f;
    return v == 0.0f ? 0.5f : v;
  }

 private:
  uint64_t state_;
};

inline float round_bf16(float v) {
  return bf16_to_float(float_to_bf16(v));
}

// A weight matrix: its device form (QuantizedMatrix, or bf16 bits) and the values it stands for.
struct HostMatrix {
  DType format = DType::bf16;
  int64_t out = 0, in = 0, group_size = 0;
  QuantizedMatrix quantized;        // int8 / int4 / fp8
  std::vector<uint16_t> bf16_bits;  // bf16
  std::vector<float> values;        // [out][in]
};

// Rows of random weights whose scale varies by row (and an outlier now and then, so int4
// groups and per-row absmax differ), quantized to `format`.
inline HostMatrix make_host_matrix(DType format, int64_t out, int64_t in, int64_t group_size,
                                   uint64_t seed) {
  HostMatrix m;
  m.format = format;
  m.out = out;
  m.in = in;
  Random random(seed);
  std::vector<float> w(static_cast<size_t>(out * in));
  for (int64_t o = 0; o < out; ++o) {
    const float row_scale = 0.02f * (1.0f + 0.5f * random.symmetric());
    for (int64_t k = 0; k < in; ++k) {
      float v = row_scale * random.symmetric();
      if ((random.next() & 1023) == 0) v *= 8.0f;
      w[o * in + k] = v;
    }
  }
  if (format == DType::bf16) {
    m.bf16_bits.resize(w.size());
    m.values.resize(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      m.bf16_bits[i] = float_to_bf16(w[i]);
      m.values[i] = bf16_to_float(m.bf16_bits[i]);
    }
    return m;
  }
  m.quantized = quantize_matrix(w.data(), out, in, format, group_size);
  m.group_size = m.quantized.group_size;
  m.values = dequantize_matrix(m.quantized);
  return m;
}

// An int4 matrix with zeros other than quantize_matrix's 8 (asymmetric grids, as GPTQ
// checkpoints may have): each group's zero drawn from [0, 15], the values recomputed.
inline void randomize_int4_zeros(HostMatrix& m, uint64_t seed) {
  Random random(seed);
  for (auto& z : m.quantized.zeros) z = static_cast<uint8_t>(random.next() % 16);
  m.values = dequantize_matrix(m.quantized);
}

// Input rows as bf16 bits and values; `spread` varies by row.
struct HostRows {
  int64_t rows = 0, in = 0;
  std::vector<uint16_t> bits;
  std::vector<float> values;
};
inline HostRows make_host_rows(int64_t rows, int64_t in, uint64_t seed, float spread = 1.0f) {
  HostRows x;
  x.rows = rows;
  x.in = in;
  Random random(seed);
  for (int64_t r = 0; r < rows; ++r) {
    const float scale = spread * (1.0f + 0.75f * random.symmetric());
    for (int64_t k = 0; k < in; ++k) {
      x.bits.push_back(float_to_bf16(scale * random.symmetric()));
      x.values.push_back(bf16_to_float(x.bits.back()));
    }
  }
  return x;
}

// The values the projection multiplies: x itself, or each row quantized as the engine does
// (int8 / fp8 input) and dequantized in fp64.
inline std::vector<double> effective_input(const std::vector<float>& x, int64_t rows, int64_t in,
                                           DType input_format) {
  std::vector<double> out(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x.data() + r * in;
    if (input_format == DType::int8) {
      std::vector<int8_t> q(static_cast<size_t>(in));
      const double scale = quantize_row_int8(row, in, q.data());
      for (int64_t k = 0; k < in; ++k) out[r * in + k] = scale * q[k];
    } else if (input_format == DType::fp8) {
      std::vector<uint8_t> q(static_cast<size_t>(in));
      const double scale = quantize_row_e4m3(row, in, q.data());
      for (int64_t k = 0; k < in; ++k) out[r * in + k] = scale * e4m3_to_float(q[k]);
    } else {
      for (int64_t k = 0; k < in; ++k) out[r * in + k] = row[k];
    }
  }
  return out;
}

// Exact sums y[r][o] (+ bias) and Σ|w·x| (the scale of the accumulation error) for the
// features in `features` (all when empty), fp64, over several threads.
struct ExactSums {
  std::vector<int64_t> features;
  std::vector<double> y, magnitude;  // [rows][features.size()]
  double at(int64_t r, size_t f) const { return y[r * features.size() + f]; }
  double mag(int64_t r, size_t f) const { return magnitude[r * features.size() + f]; }
};
inline ExactSums exact_sums(const HostMatrix& w, const std::vector<double>& x, int64_t rows,
                            const std::vector<float>& bias, std::vector<int64_t> features) {
  ExactSums s;
  if (features.empty()) {
    for (int64_t o = 0; o < w.out; ++o) features.push_back(o);
  }
  s.features = features;
  const size_t n = features.size();
  s.y.assign(static_cast<size_t>(rows) * n, 0.0);
  s.magnitude.assign(s.y.size(), 0.0);
  const unsigned threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (size_t i = t; i < s.y.size(); i += threads) {
        const int64_t r = static_cast<int64_t>(i / n), o = features[i % n];
        const float* wr = w.values.data() + o * w.in;
        const double* xr = x.data() + r * w.in;
        double sum = 0, mag = 0;
        for (int64_t k = 0; k < w.in; ++k) {
          const double p = static_cast<double>(wr[k]) * xr[k];
          sum += p;
          mag += std::abs(p);
        }
        if (!bias.empty()) sum += bias[o];
        s.y[i] = sum;
        s.magnitude[i] = mag;
      }
    });
  }
  for (auto& thread : pool) thread.join();
  return s;
}

inline double silu(double g) {
  return g / (1.0 + std::exp(-g));
}

// Accumulation error allowed per element, relative to Σ|w·x|: fp32 sums of up to 14336
// exact products in tensor-core steps of 16-32 (each step's rounding ≤ 2^-23 of the running
// sum: ≤ 2^-13 over 900 steps) and the scale products after them, with a factor 2.
constexpr double kAccumulation = 1.0 / 4096;
// Extra on the tensor-core path of int8/int4 weights: each weight is rounded to bf16 first
// (2^-9 relative), which can add up to 2^-9 of Σ|w·x| (and ~2^-9 of ‖y‖ in norm).
constexpr double kBf16Weights = 1.0 / 512;

}  // namespace inferlab::engine::projection_test
