#pragma once
// The quantization arithmetic, host side: the one definition that the CPU reference runs, that
// the CUDA backend's loader packs for the GPU, that `inferlab quantize` writes, and that the GPU
// kernels are tested against. (C++17: CUDA tests include it.)
#include <cstdint>
#include <vector>

#include "util/dtype.hpp"

namespace inferlab::engine {

inline constexpr float kInt8Max = 127.0f;
inline constexpr float kE4m3Max = 448.0f;

// FP8 E4M3 as Hopper and PyTorch's float8_e4m3fn have it (bias 7, no infinities, ±448 the
// largest finite, S.1111.111 NaN): round to nearest even, saturating at ±448 (what
// __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3) does); NaN → 0x7f.
uint8_t float_to_e4m3(float x);
float e4m3_to_float(uint8_t bits);
// IEEE binary16, round to nearest even, overflow to ±inf (fp16_to_float is in bf16.hpp).
uint16_t float_to_fp16(float x);
float round_to_fp16(float x);  // float_to_fp16 and back

// One projection [out, in] quantized, in the engine's layout (rows along the input dimension):
//   int8: data[o·in + k] is q as int8, w = scales[o] · q; scales fp16-representable.
//   fp8:  data[o·in + k] is E4M3, w = scales[o] · e4m3(q); scales fp32.
//   int4: data[o·in/2 + k/2] holds k even in its low nibble and k odd in its high nibble,
//         w = scales[o·groups + g] · (q − zeros[o·groups + g]), g = k / group_size, q and
//         zeros in [0, 15]; scales fp16-representable.
struct QuantizedMatrix {
  DType format = DType::bf16;
  int64_t out = 0, in = 0;
  int64_t group_size = 0;      // int4; 0 otherwise
  std::vector<uint8_t> data;   // see above
  std::vector<float> scales;   // [out] or [out][groups]
  std::vector<uint8_t> zeros;  // int4: [out][groups]; empty otherwise
  int64_t groups() const { return group_size > 0 ? in / group_size : 1; }
  // Bytes the GPU reads for it: data, scales as stored there (fp16 for int4, fp32 else), zeros.
  int64_t device_bytes() const;
};

// Round to nearest (no calibration data):
//   int8: scale = fp16(absmax / 127) per output row, q = clamp(rne(w / scale), -127, 127);
//   int4: GPTQ's symmetric grid per group, scale = fp16(2·absmax / 15), zero = 8,
//         q = clamp(rne(w / scale) + 8, 0, 15);
//   fp8:  scale = absmax / 448 per output row, q = e4m3(w / scale).
// An all-zero row or group gets scale 1. w is row-major [out, in].
QuantizedMatrix quantize_matrix(const float* w, int64_t out, int64_t in, DType format,
                                int64_t group_size = 128);
// The values the quantized matrix stands for, row-major [out, in].
std::vector<float> dequantize_matrix(const QuantizedMatrix& m);
// Rows of several matrices (same format, width and groups) one after another: the fused QKV and
// gate/up projections.
QuantizedMatrix stack_rows(const std::vector<const QuantizedMatrix*>& parts);

// Per-token (activations) and per-(token, KV head) quantization of one vector of n values:
// scale = absmax / 127 (int8) or absmax / 448 (fp8), 1 when the vector is all zeros;
// q = clamp(rne(x / scale), -127, 127) or e4m3(x / scale). Returns the scale.
float quantize_row_int8(const float* x, int64_t n, int8_t* q);
float quantize_row_e4m3(const float* x, int64_t n, uint8_t* q);
// x ← dequantize(quantize(x)) for format int8 or fp8 (bf16: x ← bf16(x); others: unchanged).
void fake_quantize_row(float* x, int64_t n, DType format);

}  // namespace inferlab::engine
