#pragma once
#include <cstdint>

#include "model/op.hpp"

namespace inferlab {

// How a GEMM library spreads a GEMM over the SMs: output tiles (tile_m x tile_n), split-K when
// there are fewer tiles than SMs, and waves of at most one tile per SM. Small M pads to
// tile_m (the skinny-GEMM regime); a last partial wave idles SMs (wave quantization).
struct GemmTiling {
  int64_t tile_m = 0, tile_n = 0, split_k = 1;
  int64_t work_units = 0;  // tiles x split_k, over all groups
  int64_t waves = 0;
  // FLOPs the machine spends in the time the tiling takes: waves x SMs x per-unit FLOPs.
  double occupied_flops = 0.0;
};

// Picks the candidate tiling with the fewest occupied FLOPs (the shortest time), as a library
// heuristic would. sm_count must be positive.
GemmTiling choose_gemm_tiling(const GemmShape& shape, int sm_count);

}  // namespace inferlab
