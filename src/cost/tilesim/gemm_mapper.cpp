#include "cost/tilesim/gemm_mapper.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "util/numeric.hpp"

namespace inferlab {

namespace {
constexpr std::array<int64_t, 6> kTileSizes = {16, 32, 64, 128, 256, 512};
constexpr std::array<int64_t, 3> kTileK = {32, 64, 128};
constexpr std::array<int64_t, 6> kSplits = {1, 2, 4, 8, 16, 32};
constexpr int64_t kMinSliceK = 128;        // a split-K slice shorter than this is not offered
constexpr double kAccumulatorBytes = 4.0;  // fp32 accumulators
// Accumulators may take at most this share of the register file (the rest holds addresses,
// fragments of A and the epilogue).
constexpr double kAccumulatorRegisterShare = 0.5;
constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Rasters: how many tiles side by side along m (the rest along n) in one wave.
std::vector<int64_t> raster_options(int cores) {
  std::vector<int64_t> out;
  for (int64_t r = 1; r <= cores; r *= 2) out.push_back(r);
  return out;
}
}  // namespace

std::string GemmMapping::describe() const {
  return fmt::format("tile {}x{}x{}, raster {}x{}, split-k {}, {}, {}-outer, {} waves", tile_m,
                     tile_n, tile_k, raster_m, raster_n, split_k,
                     double_buffer ? "double-buffered" : "single-buffered",
                     order == LoopOrder::m_outer ? "m" : "n", waves);
}

GemmMapper::GemmMapper(const HardwareTemplate& hardware, int threads)
    : hw_(hardware),
      threads_(threads > 0 ? threads
                           : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))) {}

GemmMapping GemmMapper::evaluate(const GemmProblem& p, GemmMapping c) const {
  ++evaluated_;
  c.time_s = kInfinity;
  const auto& core = hw_.core;
  const double cores = hw_.core_count;
  const double slice_k = ceil_div(static_cast<double>(p.k), static_cast<double>(c.split_k));
  // Local buffer: an A and a B slice (twice when double-buffered); accumulators in registers.
  const double stage_bytes = static_cast<double>(c.tile_m + c.tile_n) * c.tile_k * p.input_bytes;
  if (stage_bytes * (c.double_buffer ? 2.0 : 1.0) > core.local_buffer_bytes) return c;
  if (static_cast<double>(c.tile_m * c.tile_n) * kAccumulatorBytes >
      kAccumulatorRegisterShare * core.register_file_bytes) {
    return c;
  }
  const double macs_per_cycle = core.tensor.macs_per_cycle(p.dtype);
  if (!(macs_per_cycle > 0.0) || core.tensor.per_core == 0) return c;

  // Work items and waves.
  const double tiles_m = ceil_div(static_cast<double>(p.m), static_cast<double>(c.tile_m));
  const double tiles_n = ceil_div(static_cast<double>(p.n), static_cast<double>(c.tile_n));
  const double items = tiles_m * tiles_n * static_cast<double>(c.split_k * p.groups);
  c.tiles = static_cast<int64_t>(items);
  const double waves = ceil_div(items, cores);
  c.waves = static_cast<int64_t>(waves);
  const double active_cores = std::min(items, cores);

  // Tensor units: the tile is cut into rows x cols blocks shared out over the core's units;
  // each block accumulates the whole K slice in place, paying the array's fill and drain once.
  const auto& tu = core.tensor;
  const double blocks = ceil_div(static_cast<double>(c.tile_m), tu.rows) *
                        ceil_div(static_cast<double>(c.tile_n), tu.cols);
  const double rounds = ceil_div(blocks, tu.per_core);
  const double tile_cycles = rounds * (slice_k + tu.rows + tu.cols);
  const double useful_macs = static_cast<double>(std::min(c.tile_m, p.m)) *
                             std::min(c.tile_n, p.n) * std::min<double>(slice_k, p.k);
  c.tensor_occupancy = useful_macs / (tile_cycles * macs_per_cycle * tu.per_core);
  const double tile_compute_s = tile_cycles / (hw_.clock_hz * hw_.efficiency.tensor);

  // Operand traffic per tile: each K slice of A rows and B columns crosses each level once.
  const double tile_operand_bytes =
      static_cast<double>(c.tile_m + c.tile_n) * slice_k * p.input_bytes;
  const double tile_local_s = tile_operand_bytes / hw_.local_buffer_bandwidth_bps();
  const double global_rate = hw_.global_buffer_rate_per_core_bps(active_cores);
  const double tile_global_s = tile_operand_bytes / global_rate;
  // Double buffering overlaps the next slice's load with this slice's math; without it they
  // take turns. Either way the first slice's load and the output write are exposed.
  const double steps = ceil_div(slice_k, static_cast<double>(c.tile_k));
  const double first_load_s = tile_global_s / steps;
  const double out_bytes = static_cast<double>(c.tile_m * c.tile_n) *
                           (c.split_k > 1 ? kAccumulatorBytes : p.output_bytes);
  const double epilogue_s = out_bytes / global_rate;
  const double tile_s = (c.double_buffer ? std::max({tile_compute_s, tile_local_s, tile_global_s})
                                         : tile_compute_s + std::max(tile_local_s, tile_global_s)) +
                        first_load_s + epilogue_s;
  c.compute_s = waves * tile_compute_s;
  c.local_s = waves * tile_local_s;
  c.global_s = waves * tile_global_s;

  // Main memory: one wave's A rows and B columns are read once; across waves the operand of
  // the outer loop stays in the global buffer if it fits beside the inner one's block.
  const double mg = std::min<double>(p.m, static_cast<double>(c.raster_m * c.tile_m));
  const double ng = std::min<double>(p.n, static_cast<double>(c.raster_n * c.tile_n));
  const double a_bytes = static_cast<double>(p.m) * p.k * p.input_bytes;
  const double b_bytes = static_cast<double>(p.n) * p.k * p.input_bytes;
  const double blocks_m = ceil_div(static_cast<double>(p.m), mg);
  const double blocks_n = ceil_div(static_cast<double>(p.n), ng);
  const double gb = hw_.global_buffer_bytes;
  double traffic = 0.0;
  if (c.order == LoopOrder::m_outer) {
    const bool b_stays = b_bytes + mg * p.k * p.input_bytes <= gb;
    traffic = a_bytes + b_bytes * (b_stays ? 1.0 : blocks_m);
  } else {
    const bool a_stays = a_bytes + ng * p.k * p.input_bytes <= gb;
    traffic = b_bytes + a_bytes * (a_stays ? 1.0 : blocks_n);
  }
  const double c_bytes = static_cast<double>(p.m) * p.n * p.output_bytes;
  traffic = (traffic + c_bytes) * static_cast<double>(p.groups);
  const double memory_bw = hw_.memory.bandwidth_bps * hw_.efficiency.memory;
  // Weights always stream from main memory: the pipeline's fill and drain add to the floor.
  c.fixed_s = hw_.efficiency.kernel_floor(KernelKind::gemm) + hw_.efficiency.memory_ramp_s;
  c.reduce_s = 0.0;
  if (c.split_k > 1) {
    // Partials are written and read back in fp32 by a second kernel, through the global
    // buffer when they fit there, else main memory.
    const double partial_bytes =
        2.0 * static_cast<double>(p.m * p.n * p.groups) * c.split_k * kAccumulatorBytes;
    const double rate = partial_bytes <= gb
                            ? hw_.global_buffer_bandwidth_bps * hw_.efficiency.global_buffer
                            : memory_bw;
    c.reduce_s = partial_bytes / rate + hw_.efficiency.kernel_floor(KernelKind::elementwise);
  }
  c.memory_bytes = traffic;
  c.memory_s = traffic / memory_bw;
  c.core_s = waves * tile_s;
  c.time_s = std::max(c.core_s, c.memory_s) + c.reduce_s + c.fixed_s;
  // What bounds it: the largest part.
  const std::array<std::pair<double, const char*>, 5> parts = {{{c.compute_s, "compute"},
                                                                {c.local_s, "local"},
                                                                {c.global_s, "global"},
                                                                {c.memory_s, "memory"},
                                                                {c.fixed_s + c.reduce_s, "fixed"}}};
  c.bound = std::max_element(parts.begin(), parts.end(), [](auto a, auto b) {
              return a.first < b.first;
            })->second;
  return c;
}

GemmMapping GemmMapper::search(const GemmProblem& p) const {
  // The candidate list, in a fixed order.
  std::vector<GemmMapping> candidates;
  const auto rasters = raster_options(hw_.core_count);
  for (int64_t tm : kTileSizes) {
    if (tm > 2 * std::max<int64_t>(p.m, 16)) continue;  // mostly padding: never the best
    for (int64_t tn : kTileSizes) {
      if (tn > 2 * std::max<int64_t>(p.n, 16)) continue;
      for (int64_t tk : kTileK) {
        for (int64_t split : kSplits) {
          if (split > 1 && p.k / split < kMinSliceK) break;
          for (bool db : {true, false}) {
            for (LoopOrder order : {LoopOrder::m_outer, LoopOrder::n_outer}) {
              for (int64_t rm : rasters) {
                GemmMapping c;
                c.tile_m = tm, c.tile_n = tn, c.tile_k = tk, c.split_k = split;
                c.double_buffer = db, c.order = order;
                c.raster_m = rm;
                c.raster_n = std::max<int64_t>(1, hw_.core_count / rm);
                candidates.push_back(c);
              }
            }
          }
        }
      }
    }
  }
  // Evaluate in contiguous chunks on threads; each keeps its first minimum, then the chunks'
  // minima are compared in order: the same winner whatever the thread count.
  const int workers =
      std::max(1, std::min<int>(threads_, static_cast<int>(candidates.size() / 256)));
  std::vector<GemmMapping> best(workers);
  auto run = [&](int w) {
    const size_t begin = candidates.size() * w / workers;
    const size_t end = candidates.size() * (w + 1) / workers;
    GemmMapping local;
    local.time_s = kInfinity;
    for (size_t i = begin; i < end; ++i) {
      GemmMapping priced = evaluate(p, candidates[i]);
      if (priced.time_s < local.time_s) local = priced;
    }
    best[w] = local;
  };
  if (workers == 1) {
    run(0);
  } else {
    std::vector<std::thread> pool;
    for (int w = 0; w < workers; ++w) pool.emplace_back(run, w);
    for (auto& t : pool) t.join();
  }
  GemmMapping winner = best[0];
  for (int w = 1; w < workers; ++w) {
    if (best[w].time_s < winner.time_s) winner = best[w];
  }
  return winner;
}

GemmMapping GemmMapper::map(const GemmProblem& p) const {
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = cache_.find(p.key());
    if (it != cache_.end()) return it->second;
  }
  GemmMapping m = search(p);
  std::lock_guard<std::mutex> lock(cache_mutex_);
  cache_.emplace(p.key(), m);
  return m;
}

}  // namespace inferlab
