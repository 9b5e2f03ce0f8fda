#pragma once
// Filling device memory with random-looking values for benchmarks (a KV cache at a long context
// without prefilling it). Graph-capturable; nothing here is on the inference path.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "util/dtype.hpp"

namespace inferlab::engine::cuda {

// `count` elements of `format` at `data`: bf16 uniform in [-1, 1); int8 any byte; fp8 any finite
// E4M3 code of magnitude below 2 (no NaN).
void fill_random(void* data, size_t count, DType format, uint64_t seed, cudaStream_t stream);
// `count` floats set to `value`.
void fill_value(float* data, size_t count, float value, cudaStream_t stream);
// Every SM's shared memory (as much as one block may take) set to 0xff bytes, NaN in bf16 and
// fp32, and left so: a kernel run next that reads shared memory it did not write then computes
// with NaN, which a test's comparison catches (shared memory is not cleared between kernels).
void poison_shared_memory(cudaStream_t stream);

}  // namespace inferlab::engine::cuda
