#include "engine/cuda/calibration_kernels.hpp"
#include "engine/cuda/cuda_check.hpp"

namespace inferlab::engine::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kRowsPerBlock = 64;

// Each thread takes one column over kRowsPerBlock rows; non-negative floats order as their bit
// patterns do, so an integer atomicMax merges them.
__global__ void column_absmax_kernel(const __nv_bfloat16* __restrict__ m, int64_t rows,
                                     int64_t cols, float* __restrict__ maxima) {
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (col >= cols) return;
  const int64_t first = static_cast<int64_t>(blockIdx.y) * kRowsPerBlock;
  const int64_t last = min(rows, first + kRowsPerBlock);
  float best = 0.0f;
  for (int64_t r = first; r < last; ++r)
    best = fmaxf(best, fabsf(__bfloat162float(m[r * cols + col])));
  atomicMax(reinterpret_cast<int*>(maxima + col), __float_as_int(best));
}

}  // namespace

void merge_column_absmax(const __nv_bfloat16* m, int64_t rows, int64_t cols, float* maxima,
                         cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  const dim3 grid(static_cast<unsigned>((cols + kThreads - 1) / kThreads),
                  static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock));
  column_absmax_kernel<<<grid, kThreads, 0, stream>>>(m, rows, cols, maxima);
  INFERLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace inferlab::engine::cuda
