#pragma once
#include <nlohmann/json.hpp>

namespace inferlab::probe {

// Launch and synchronization costs: host cost of a kernel launch, GPU gap between back-to-back
// kernels with and without a CUDA graph, host cost of a graph launch, and a launch + sync round
// trip. Microseconds, with stats.
nlohmann::json measure_launch_overheads(bool quick);

}  // namespace inferlab::probe
