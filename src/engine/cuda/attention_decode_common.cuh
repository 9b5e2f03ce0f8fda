#pragma once
// Pieces the two decode kernels share (attention_decode.cu: a CTA per chunk of positions,
// attention_decode_stream.cu: each warp streaming its own rows): the launch arguments, the
// writing of a split's result, and the launch with programmatic dependent launch. Internal to
// the CUDA backend; C++17.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/cuda/attention.hpp"
#include "engine/cuda/attention_device.cuh"
#include "engine/cuda/cuda_check.hpp"

namespace inferlab::engine::cuda::detail {

struct DecodeArgs {
  PagedAttentionParams p;
  int group;  // query heads per KV head
  int num_splits;
  int partition;       // positions per split
  float* partial_out;  // [num_seqs][num_heads][num_splits][head_dim], normalized
  float2* partial_ml;  // [num_seqs][num_heads][num_splits]: (running max, sum), log2 domain
  // Every sequence has exactly one new token (a decode batch): every partial row is written, so
  // the combine may read its rows before it knows its sequence's token. Otherwise it looks first
  // and leaves the rows of other sequences unread (never written: uninitialized memory).
  bool every_sequence_single;
  int block_shift;  // log2(block_size) when that is a power of two, else -1
  // The streamed kernel may read the cache before its grid wait (launched programmatically, while
  // the kernel before it finishes): each sequence it attends for is a real one with its one new
  // token at context - 1 (those with more new tokens, in a mixed batch, it passes over), so
  // every other position it reads was written by an earlier pass, and the metadata by the
  // host's upload before the pass. Not for the by-token view (table_rows), whose sequences'
  // earlier positions include this pass's other new tokens.
  bool cache_before_wait;
};

// Element d of head `head`'s result for (token, seq, split): with one split the output itself,
// else the split's normalized partial o and, once per head (d = 0), its (max, sum) pair in the
// log2 domain. An empty split writes (0, -inf, 0): zeros too, so that the combine's loads need no
// branch (and stay in flight together).
template <int D>
__device__ __forceinline__ void write_split_element(const DecodeArgs& a, int token, int seq,
                                                    int head, int split, int d, float o, float m,
                                                    float l) {
  const PagedAttentionParams& p = a.p;
  if (a.num_splits == 1) {
    p.out[(static_cast<int64_t>(token) * p.num_heads + head) * D + d] = __float2bfloat16(o);
    return;
  }
  const int64_t r = (static_cast<int64_t>(seq) * p.num_heads + head) * a.num_splits + split;
  a.partial_out[r * D + d] = o;
  if (d == 0) a.partial_ml[r] = make_float2(m, l);
}

// A decode kernel's launch: programmatic when asked (programmatic_launch.cuh).
template <typename... Params, typename... Args>
void launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem_bytes,
                   bool programmatic, cudaStream_t stream, const Args&... args) {
  launch_maybe_programmatic(kernel, grid, block, smem_bytes, programmatic, stream,
                            "decode attention launch", args...);
}

// The split kernel of the streaming variant (attention_decode_stream.cu) for a.p's head_dim,
// group and cache format; the combine is launch_decode's.
void launch_stream_decode(const DecodeArgs& a, bool programmatic, cudaStream_t stream);

}  // namespace inferlab::engine::cuda::detail
