#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "probe/projection_shapes.hpp"

namespace inferlab::probe {

// Dense tensor-core peaks through cuBLASLt (tf32, fp16, bf16, fp8 e4m3, int8): best over a few
// large shapes, each type's layout first checked against a float64 host reference.
nlohmann::json measure_tensor_peaks(bool quick);

// bf16 GEMM latency of the given projections over token counts (M), plus N and K sweeps at
// fixed M that expose the tile and wave staircases. L2 flushed before each timed run.
nlohmann::json sweep_gemms(const std::vector<ProjectionShape>& projections, size_t l2_bytes,
                           int sm_count, bool quick);

}  // namespace inferlab::probe
