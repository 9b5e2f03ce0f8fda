#pragma once
// The Hopper (sm_90a) prefill kernel of paged attention, FlashAttention-3 style: wgmma on the
// tensor cores, TMA loads of the paged K/V cache completing on mbarriers, one producer warpgroup
// and two consumer warpgroups. Same contract as detail::launch_prefill (attention_kernels.hpp):
// PagedAttentionParams in, bf16 out; the one-query sequences are left alone when
// skip_single_queries is set. Internal to the CUDA backend; C++17 (included by .cu files).
#include <cuda_runtime.h>

#include "engine/cuda/attention.hpp"

namespace inferlab::engine::cuda::detail {

// How each consumer warpgroup orders its two GEMMs per key tile. kOverlapped (the default) issues
// tile t's Q·Kᵀ and tile t-1's P·V together and runs tile t's softmax while P·V is in flight
// (FlashAttention-3's intra-warpgroup pipelining); kSerial waits for each GEMM before the next
// step. Both compute the same function; tests and benchmarks run both.
enum class HopperPrefillSchedule { kOverlapped, kSerial };

// True when launch_prefill_hopper can run `p` on a device of compute capability `device_cc`
// (major * 10 + minor, so 90 for an H100 or H200): the device is 9.0, this binary carries the
// kernel's sm_90a image (built only by nvcc targeting sm_90a), the cache is bf16 (not naive),
// head_dim is 64 or 128 (192 and 256 go to the mma.sync kernel), block_size is a power of two
// of at least 16, and the pointers and the query row stride suit TMA (16-byte aligned). Cheap
// after the first call (no device work).
bool hopper_prefill_supported(const PagedAttentionParams& p, int device_cc);

// Launches the kernel on `stream` (no synchronisation, no allocation: graph-capturable; the TMA
// descriptors are built on the host per call and passed by value). Throws std::runtime_error when
// the driver cannot encode a tensor map. Call only where hopper_prefill_supported(p, cc) holds.
// `sm_count` is accepted for parity with launch_prefill (the grid does not depend on it yet).
void launch_prefill_hopper(const PagedAttentionParams& p, int sm_count, cudaStream_t stream,
                           HopperPrefillSchedule schedule = HopperPrefillSchedule::kOverlapped);

// What the kernel's barrier-wait watchdog saw: a wait of over ~8 s (a broken TMA/mbarrier
// pipeline, which would otherwise hang the GPU) sets `tripped` and where (the CTA, the thread, the
// mbarrier index: 0 query, 1 last V tile, then full K, full V, empty K, empty V per stage), and
// the kernel finishes with wrong output instead of hanging.
struct HopperWatchdogReport {
  int tripped = 0;
  int block[3] = {0, 0, 0};
  int thread = 0;
  int barrier = 0;
  int parity = 0;
};
// Reads and clears the report (synchronous: call after the kernel has finished). False where
// nothing tripped.
bool hopper_prefill_watchdog(HopperWatchdogReport* report);

// Registers, local memory and shared memory of the kernel instance for (head_dim, schedule), for
// the tests' report; false where the image is missing.
bool hopper_prefill_attributes(int head_dim, HopperPrefillSchedule schedule,
                               cudaFuncAttributes* attributes);

}  // namespace inferlab::engine::cuda::detail
