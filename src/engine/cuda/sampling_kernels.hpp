#pragma once
// Sampling on the GPU from fp32 logits [rows, vocab] (one row per sequence): greedy argmax, and
// temperature / top-k / top-p sampling with the semantics of engine/sampling.hpp
// (sampling_distribution + Sampler::sample): softmax(logits / temperature); top_k keeps the k
// most likely (ties: lower id first); top_p keeps, of those renormalized, the smallest prefix
// whose probability reaches top_p (at least one); the pick is the first kept token whose running
// probability exceeds u · (kept mass), u the uniform draw the host's Sampler made for the row.
// The CPU reference is pick_token(sampling_distribution(...), u) (engine/sampling.hpp).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace inferlab::engine::cuda {

struct RowSampling {
  float temperature = 0;  // <= 0: greedy (argmax, lowest id among ties, NaN never wins)
  int top_k = 0;          // 0: no limit; 1: greedy
  float top_p = 1;        // 1: no limit
  double uniform = 0;     // in [0, 1): the row's draw
};

// Scratch for rows × vocab sampling. The radix-search implementation (sampling_kernels.cu) keeps
// everything in shared memory and needs none (0); callers still size the workspace with this so
// that an implementation that needs scratch changes nothing for them.
size_t sampling_workspace_bytes(int rows, int vocab);

// ids[r] = the token row r picks. `rows_params` is a device array of `rows` entries. Launches on
// `stream`, no allocation (graph-capturable); throws std::invalid_argument for a workspace that
// is too small, a vocab outside [1, 2^19] or rows < 0.
void sample_rows(const float* logits, int rows, int vocab, const RowSampling* rows_params,
                 int32_t* ids, void* workspace, size_t workspace_bytes, cudaStream_t stream);

}  // namespace inferlab::engine::cuda
