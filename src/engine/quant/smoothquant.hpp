#pragma once
// SmoothQuant's migration for W8A8 (Xiao et al., 2023): activation outliers sit in a few input
// channels, so before quantizing, channel j of a projection's input is divided by s_j and the
// weight's column j multiplied by it — x·Wᵀ is unchanged, both factors quantize better. The
// inputs of the QKV and gate/up projections are RMSNorm outputs, so 1/s folds into the norm's
// weight and costs nothing at run time (the O and down projections are left as they are, as the
// paper does for Llama). s_j = max|X_j|^α / max|W_j|^(1−α), from a calibration pass.
#include <cstdint>
#include <vector>

namespace inferlab::engine {

// Absolute maxima per input channel, per layer ([layer][hidden]): of the QKV and gate/up
// inputs over the calibration tokens, and of those projections' weights over their output rows.
struct SmoothQuantStats {
  std::vector<std::vector<float>> qkv_input, gate_up_input;
  std::vector<std::vector<float>> qkv_weight, gate_up_weight;
  // Empty statistics for `layers` layers of width `hidden` (zeros: nothing seen yet).
  static SmoothQuantStats zeros(int64_t layers, int64_t hidden);
  // Element-wise maximum with another pass's statistics.
  void merge(const SmoothQuantStats& other);
};

// s per layer and channel: the input is divided by it, the weight's column multiplied.
struct SmoothingFactors {
  std::vector<std::vector<float>> qkv, gate_up;  // [layer][hidden]
};

// s_j = max(x_j, 1e-5)^α / max(w_j, 1e-5)^(1−α), clamped to [1e-3, 1e3] (a channel that never
// fired must not blow up its weights); α in [0, 1].
SmoothingFactors smoothing_factors(const SmoothQuantStats& stats, double alpha);

// The migration applied to one projection [out, hidden] (columns times s) and to its norm's
// weight (divided by s, then rounded to bf16 as a checkpoint would store it).
void scale_weight_columns(float* weight, int64_t out, int64_t hidden, const std::vector<float>& s);
void divide_norm_weight(float* norm_weight, int64_t hidden, const std::vector<float>& s);

// The calibration pass's prompt: `count` token ids below `vocab`, drawn from `seed` (the same
// on the CPU and the GPU, so both calibrate on the same tokens).
std::vector<int32_t> calibration_tokens(int64_t vocab, int64_t count, uint64_t seed);

// Column-wise absolute maxima of a row-major [rows, cols] matrix, merged into `maxima`.
void merge_column_absmax(const float* matrix, int64_t rows, int64_t cols,
                         std::vector<float>& maxima);

}  // namespace inferlab::engine
