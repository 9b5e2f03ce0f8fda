#include "cost/gemm_tiling.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace inferlab {

namespace {
int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
// Tile shapes of the kind cuBLAS and CUTLASS kernels use on recent GPUs. The 64-row tiles are
// only for skinny GEMMs (M <= 64): for larger M their lower operand reuse costs more than the
// finer wave granularity gains, which this model does not price, so they are not offered.
constexpr std::array<std::pair<int64_t, int64_t>, 5> kTiles = {
    {{128, 256}, {256, 128}, {128, 128}, {64, 128}, {64, 64}}};
constexpr int64_t kSkinnyMaxRows = 64;
// split-K keeps at least this much K per slice (shorter slices cost more in reduction).
constexpr int64_t kMinSliceK = 256;
}  // namespace

GemmTiling choose_gemm_tiling(const GemmShape& shape, int sm_count) {
  GemmTiling best;
  const int64_t sms = std::max(1, sm_count);
  for (auto [tm, tn] : kTiles) {
    if (tm < 128 && shape.m > kSkinnyMaxRows) continue;
    int64_t tiles = shape.groups * ceil_div(shape.m, tm) * ceil_div(shape.n, tn);
    int64_t split = 1;
    if (tiles < sms) {
      split = std::clamp<int64_t>(sms / tiles, 1, std::max<int64_t>(1, shape.k / kMinSliceK));
    }
    int64_t units = tiles * split;
    int64_t waves = ceil_div(units, sms);
    double unit_flops =
        2.0 * static_cast<double>(tm * tn) * static_cast<double>(ceil_div(shape.k, split));
    double occupied = static_cast<double>(waves * sms) * unit_flops;
    if (best.waves == 0 || occupied < best.occupied_flops) {
      best = {tm, tn, split, units, waves, occupied};
    }
  }
  return best;
}

}  // namespace inferlab
