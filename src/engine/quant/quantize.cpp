#include "engine/quant/quantize.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/bf16.hpp"

namespace inferlab::engine {

uint8_t float_to_e4m3(float x) {
  if (std::isnan(x)) return 0x7f;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const float a = std::fabs(x);
  if (a >= kE4m3Max) return sign | 0x7e;  // saturate (infinities included)
  int e = 0;
  std::frexp(a, &e);     // a = f · 2^e, f in [0.5, 1): a = 1.m · 2^(e − 1)
  int exponent = e - 1;  // unbiased
  if (a == 0 || exponent < -6) {
    // Subnormal: multiples of 2^-9; a count of 8 is the smallest normal (code 0x08).
    const auto q = static_cast<int>(std::nearbyint(std::ldexp(a, 9)));
    return sign | static_cast<uint8_t>(q);
  }
  auto q = static_cast<int>(std::nearbyint(std::ldexp(a, 3 - exponent)));  // in [8, 16]
  if (q == 16) {
    q = 8;
    ++exponent;
  }
  const int code = ((exponent + 7) << 3) | (q - 8);
  return sign | static_cast<uint8_t>(std::min(code, 0x7e));
}

float e4m3_to_float(uint8_t bits) {
  const int exponent = (bits >> 3) & 0xf, mantissa = bits & 0x7;
  float value;
  if (exponent == 0xf && mantissa == 0x7) {
    value = std::nanf("");
  } else if (exponent == 0) {
    value = std::ldexp(static_cast<float>(mantissa), -9);
  } else {
    value = std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - 7);
  }
  return (bits & 0x80) ? -value : value;
}

uint16_t float_to_fp16(float x) {
  uint32_t word;
  std::memcpy(&word, &x, sizeof word);
  const uint16_t sign = static_cast<uint16_t>((word >> 16) & 0x8000u);
  if (std::isnan(x)) return sign | 0x7e00u;
  const float a = std::fabs(x);
  if (a >= 65520.0f) return sign | 0x7c00u;  // rounds past the largest finite (65504): inf
  int e = 0;
  std::frexp(a, &e);
  int exponent = e - 1;
  if (a == 0 || exponent < -14) {  // subnormal: multiples of 2^-24
    const auto q = static_cast<uint32_t>(std::nearbyint(std::ldexp(a, 24)));
    return sign | static_cast<uint16_t>(q);  // 1024 is the smallest normal's code
  }
  auto q = static_cast<uint32_t>(std::nearbyint(std::ldexp(a, 10 - exponent)));  // [1024, 2048]
  if (q == 2048) {
    q = 1024;
    ++exponent;
  }
  return sign | static_cast<uint16_t>(((exponent + 15) << 10) | (q - 1024));
}

float round_to_fp16(float x) {
  return fp16_to_float(float_to_fp16(x));
}

int64_t QuantizedMatrix::device_bytes() const {
  const auto scale_bytes = static_cast<int64_t>(scales.size()) * (format == DType::int4 ? 2 : 4);
  return static_cast<int64_t>(data.size() + zeros.size()) + scale_bytes;
}

namespace {

float absmax(const float* x, int64_t n) {
  float m = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(x[i]));
  return m;
}

int clamp_int(float v, int lo, int hi) {
  return static_cast<int>(std::clamp(v, static_cast<float>(lo), static_cast<float>(hi)));
}

}  // namespace

QuantizedMatrix quantize_matrix(const float* w, int64_t out, int64_t in, DType format,
                                int64_t group_size) {
  QuantizedMatrix m;
  m.format = format;
  m.out = out;
  m.in = in;
  switch (format) {
    case DType::int8:
      m.data.resize(static_cast<size_t>(out * in));
      m.scales.resize(static_cast<size_t>(out));
      for (int64_t o = 0; o < out; ++o) {
        const float* row = w + o * in;
        const float top = absmax(row, in);
        const float scale = top > 0 ? round_to_fp16(top / kInt8Max) : 1.0f;
        m.scales[o] = scale;
        for (int64_t k = 0; k < in; ++k) {
          const int q = clamp_int(std::nearbyint(row[k] / scale), -127, 127);
          m.data[o * in + k] = static_cast<uint8_t>(static_cast<int8_t>(q));
        }
      }
      return m;
    case DType::fp8:
      m.data.resize(static_cast<size_t>(out * in));
      m.scales.resize(static_cast<size_t>(out));
      for (int64_t o = 0; o < out; ++o) {
        m.scales[o] = quantize_row_e4m3(w + o * in, in, m.data.data() + o * in);
      }
      return m;
    case DType::int4: {
      if (group_size < 2 || in % group_size != 0 || group_size % 2 != 0) {
        throw std::invalid_argument("quantize_matrix: int4 group size " +
                                    std::to_string(group_size) + " does not divide " +
                                    std::to_string(in));
      }
      m.group_size = group_size;
      const int64_t groups = in / group_size;
      m.data.assign(static_cast<size_t>(out * in / 2), 0);
      m.scales.resize(static_cast<size_t>(out * groups));
      m.zeros.assign(static_cast<size_t>(out * groups), 8);
      for (int64_t o = 0; o < out; ++o) {
        for (int64_t g = 0; g < groups; ++g) {
          const float* part = w + o * in + g * group_size;
          const float top = absmax(part, group_size);
          const float scale = top > 0 ? round_to_fp16(2.0f * top / 15.0f) : 1.0f;
          m.scales[o * groups + g] = scale;
          for (int64_t j = 0; j < group_size; ++j) {
            const int q = clamp_int(std::nearbyint(part[j] / scale) + 8.0f, 0, 15);
            const int64_t k = g * group_size + j;
            m.data[(o * in + k) / 2] |= static_cast<uint8_t>(q << (4 * (k % 2)));
          }
        }
      }
      return m;
    }
    default:
      throw std::invalid_argument("quantize_matrix: " + std::string(dtype_name(format)) +
                                  " is not a quantized weight format");
  }
}

std::vector<float> dequantize_matrix(const QuantizedMatrix& m) {
  std::vector<float> w(static_cast<size_t>(m.out * m.in));
  for (int64_t o = 0; o < m.out; ++o) {
    for (int64_t k = 0; k < m.in; ++k) {
      const int64_t at = o * m.in + k;
      switch (m.format) {
        case DType::int8:
          w[at] = m.scales[o] * static_cast<float>(static_cast<int8_t>(m.data[at]));
          break;
        case DType::fp8:
          w[at] = m.scales[o] * e4m3_to_float(m.data[at]);
          break;
        case DType::int4: {
          const int q = (m.data[at / 2] >> (4 * (k % 2))) & 0xf;
          const int64_t g = o * m.groups() + k / m.group_size;
          w[at] = m.scales[g] * static_cast<float>(q - m.zeros[g]);
          break;
        }
        default:
          throw std::invalid_argument("dequantize_matrix: not a quantized matrix");
      }
    }
  }
  return w;
}

QuantizedMatrix stack_rows(const std::vector<const QuantizedMatrix*>& parts) {
  if (parts.empty()) throw std::invalid_argument("stack_rows: nothing to stack");
  QuantizedMatrix m;
  m.format = parts[0]->format;
  m.in = parts[0]->in;
  m.group_size = parts[0]->group_size;
  for (const QuantizedMatrix* p : parts) {
    if (p->format != m.format || p->in != m.in || p->group_size != m.group_size) {
      throw std::invalid_argument("stack_rows: the parts differ in format, width or groups");
    }
    m.out += p->out;
    m.data.insert(m.data.end(), p->data.begin(), p->data.end());
    m.scales.insert(m.scales.end(), p->scales.begin(), p->scales.end());
    m.zeros.insert(m.zeros.end(), p->zeros.begin(), p->zeros.end());
  }
  return m;
}

float quantize_row_int8(const float* x, int64_t n, int8_t* q) {
  const float top = absmax(x, n);
  const float scale = top > 0 ? top / kInt8Max : 1.0f;
  for (int64_t i = 0; i < n; ++i) {
    q[i] = static_cast<int8_t>(clamp_int(std::nearbyint(x[i] / scale), -127, 127));
  }
  return scale;
}

float quantize_row_e4m3(const float* x, int64_t n, uint8_t* q) {
  const float top = absmax(x, n);
  const float scale = top > 0 ? top / kE4m3Max : 1.0f;
  for (int64_t i = 0; i < n; ++i) q[i] = float_to_e4m3(x[i] / scale);
  return scale;
}

void fake_quantize_row(float* x, int64_t n, DType format) {
  if (format == DType::int8) {
    std::vector<int8_t> q(static_cast<size_t>(n));
    const float scale = quantize_row_int8(x, n, q.data());
    for (int64_t i = 0; i < n; ++i) x[i] = scale * static_cast<float>(q[i]);
  } else if (format == DType::fp8) {
    std::vector<uint8_t> q(static_cast<size_t>(n));
    const float scale = quantize_row_e4m3(x, n, q.data());
    for (int64_t i = 0; i < n; ++i) x[i] = scale * e4m3_to_float(q[i]);
  } else if (format == DType::bf16) {
    for (int64_t i = 0; i < n; ++i) x[i] = bf16_to_float(float_to_bf16(x[i]));
  }
}

}  // namespace inferlab::engine
