#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "hw/hardware_template.hpp"

namespace inferlab {

// One GEMM (or `groups` independent GEMMs of one shape): C[m,n] = A[m,k] B[k,n].
struct GemmProblem {
  int64_t m = 0, n = 0, k = 0, groups = 1;
  DType dtype = DType::bf16;  // the tensor-unit format
  double input_bytes = 2.0;   // per element of A and B
  double output_bytes = 2.0;  // per element of C
  auto key() const {
    return std::make_tuple(m, n, k, groups, static_cast<int>(dtype), input_bytes, output_bytes);
  }
};

enum class LoopOrder { m_outer, n_outer };

// How a GEMM is laid onto the template, and what each level costs. A core computes one
// tile_m x tile_n output tile at a time, streaming K in tile_k slices from the global buffer
// into its local buffer (double-buffered or not); raster_m x raster_n cores work side by
// side in a wave, so one wave covers a global-buffer tile of (raster_m tile_m) x (raster_n
// tile_n), whose A rows and B columns are read from main memory once per wave; the loop order
// says which operand stays in the global buffer across waves. Split-K cuts K into split_k
// slices run by different cores, with an fp32 reduction afterwards.
struct GemmMapping {
  int64_t tile_m = 0, tile_n = 0, tile_k = 0;
  int64_t raster_m = 0, raster_n = 0;
  int64_t split_k = 1;
  bool double_buffer = true;
  LoopOrder order = LoopOrder::m_outer;
  int64_t tiles = 0;              // output tiles x split_k x groups: the work items
  int64_t waves = 0;              // over the cores
  double tensor_occupancy = 0.0;  // useful MACs over MAC slots of the tensor units, fill/drain in
  double compute_s = 0.0;         // tensor units, all waves
  double local_s = 0.0;           // local buffer -> tensor units, all waves
  double global_s = 0.0;          // global buffer -> local buffers, all waves
  double memory_s = 0.0;          // main memory traffic at its bandwidth
  double core_s = 0.0;  // the cores' time: waves x (overlapped tile time + prologue, epilogue)
  double memory_bytes = 0.0;
  double reduce_s = 0.0;  // split-K reduction kernel
  double fixed_s = 0.0;   // kernel launch(es)
  double time_s = 0.0;
  std::string bound;  // "compute", "local", "global", "memory", "fixed"
  std::string describe() const;
};

// Searches the mappings of a GEMM on a template and keeps the fastest (ties go to the first in
// a fixed enumeration order, so results are deterministic whatever the thread count). Results
// are cached by shape. Thread-safe.
class GemmMapper {
 public:
  explicit GemmMapper(const HardwareTemplate& hardware, int threads = 0);
  GemmMapping map(const GemmProblem& problem) const;
  // Prices one candidate (exposed for tests); a mapping that does not fit has time_s = inf.
  GemmMapping evaluate(const GemmProblem& problem, GemmMapping candidate) const;
  int64_t mappings_evaluated() const { return evaluated_.load(); }
  int threads() const { return threads_; }

 private:
  GemmMapping search(const GemmProblem& problem) const;
  const HardwareTemplate& hw_;
  int threads_;
  mutable std::mutex cache_mutex_;
  mutable std::map<decltype(GemmProblem{}.key()), GemmMapping> cache_;
  mutable std::atomic<int64_t> evaluated_{0};
};

}  // namespace inferlab
