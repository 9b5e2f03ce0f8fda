#pragma once
#include <nlohmann/json.hpp>

namespace inferlab::probe {

// NCCL all-reduce and all-gather over every visible GPU (one process, one communicator per
// device), 4 KB to 1 GB: latency and bus bandwidth as nccl-tests define it. Returns null with
// fewer than two GPUs. NVLink multicast (NVLS) is forced off.
nlohmann::json measure_collectives(bool quick);

}  // namespace inferlab::probe
