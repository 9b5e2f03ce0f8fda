#pragma once
// GPTQ (Frantar et al., 2022, "GPTQ: Accurate Post-Training Quantization for Generative
// Pre-trained Transformers"): a projection's weights quantized column after column, each
// column's rounding error spread over the columns not yet quantized through the inverse Hessian
// of the layer's inputs, H = Σ x xᵀ over calibration tokens. What it minimises is the error of
// the layer's outputs on those inputs, ||X Wᵀ − X Ŵᵀ||, where round-to-nearest minimises
// ||W − Ŵ|| alone. The grid is the one round-to-nearest uses (quantize.hpp): int4 symmetric
// groups (zero 8, scale fp16(2·absmax / 15) of the group as it stands when its first column is
// reached), int8 per-channel scales fp16(absmax / 127) of the original rows.
#include <array>
#include <cstdint>
#include <vector>

#include "engine/llama_weights.hpp"
#include "engine/quant/formats.hpp"
#include "engine/quant/quantize.hpp"

namespace inferlab::engine {

// Σ x xᵀ of a layer's input rows, accumulated over calibration passes (double: the sum of tens
// of thousands of outer products).
class InputHessian {
 public:
  explicit InputHessian(int64_t width = 0);
  int64_t width() const { return width_; }
  int64_t rows() const { return rows_; }
  // Adds rows [rows, width] (row-major).
  void add(const float* x, int64_t rows);
  const std::vector<double>& values() const { return h_; }

 private:
  int64_t width_ = 0, rows_ = 0;
  std::vector<double> h_;  // [width, width], row-major
};

struct GptqOptions {
  DType format = DType::int4;  // int4 or int8
  int64_t group_size = 128;    // int4
  // Added to H's diagonal: this fraction of its mean (GPTQ's percdamp), keeping H invertible
  // when inputs are correlated or some never vary.
  double damp = 0.01;
};

// w: [out, in] row-major; hessian: the inputs' Σ x xᵀ, in × in. Columns whose inputs were always
// zero (H[i][i] = 0) are quantized as zeros. std::invalid_argument for mismatched sizes, a format
// other than int4/int8 or a group that does not divide `in`.
QuantizedMatrix gptq_quantize(std::vector<float> w, int64_t out, int64_t in,
                              const InputHessian& hessian, const GptqOptions& options);

// The four inputs of a Llama layer's projections: the normed residual (Q, K, V), the attention
// output (O), the normed residual again after attention (gate, up) and SiLU(gate)·up (down).
enum class ProjectionInput { qkv = 0, o = 1, gate_up = 2, down = 3 };

// Every layer's four input Hessians from one calibration run (cpu/gptq_calibration.hpp), what
// gptq_quantize needs for each projection of a checkpoint.
struct GptqHessians {
  std::vector<std::array<InputHessian, 4>> layers;
  int64_t tokens = 0;  // calibration tokens they were summed over
  // The Hessian of the input `role` (a layer projection's role) reads; std::invalid_argument for
  // another role or a layer out of range.
  const InputHessian& of(WeightRole role, int64_t layer) const;
};

}  // namespace inferlab::engine
