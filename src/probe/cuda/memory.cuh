#pragma once
#include <nlohmann/json.hpp>

namespace inferlab::probe {

struct MemoryPlan {
  int sm_count = 0;
  size_t l2_bytes = 0;
  size_t hbm_test_bytes = 0;  // working set far beyond L2
  bool quick = false;
};

// memory{hbm, l2, shared}: read/write/copy bandwidth and pointer-chase latency per level, with
// hbm.read_write_mix[] and hbm.access_patterns[]. Every kernel's output is checked.
nlohmann::json measure_memory_levels(const MemoryPlan& plan);

// Read bandwidth against working-set size from a few KB to several GB, and pointer-chase
// latency against size: the L1 -> L2 -> HBM staircase.
nlohmann::json measure_working_set_sweep(const MemoryPlan& plan);

}  // namespace inferlab::probe
