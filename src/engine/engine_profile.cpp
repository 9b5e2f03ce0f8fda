#include "engine/engine_profile.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include "util/error.hpp"
#include "util/rng.hpp"

namespace inferlab::engine {

namespace {

constexpr int64_t kDecodeBatches[] = {1, 2, 4, 8, 16, 32, 64};
constexpr int64_t kDecodeContexts[] = {256, 1024, 4096};
constexpr int64_t kMaxDecodeSteps = 64;  // warmup + repeats + the profiled pass, at most
// The long grid: decode contexts on and between the decode graphs' power-of-two bounds, and
// prefill chunks (tokens, context) after a cached prefix.
constexpr int64_t kLongDecodeBatches[] = {1, 4, 8, 16};
constexpr int64_t kLargeDecodeBatches[] = {96, 128, 256};
constexpr int64_t kLargeDecodeContext = 1024;
constexpr int64_t kLongDecodeContexts[] = {6000, 8192, 12000, 16384, 24000, 32768, 65536};
constexpr std::pair<int64_t, int64_t> kLongPrefillChunks[] = {
    {2048, 16384}, {2048, 65536}, {8192, 16384}, {8192, 32768}, {8192, 65536}, {8192, 131000}};

// A batch of `batch` sequences of `tokens` random new tokens after `context - tokens` cached
// ones, each on its own blocks, covering `extra` more positions for later steps.
ForwardBatch batch_of(const ProfilePoint& p, int64_t extra, BlockAllocator& allocator,
                      int64_t block_size, int64_t vocab, Xoshiro256& rng) {
  ForwardBatch batch;
  for (int64_t s = 0; s < p.batch; ++s) {
    SequenceChunk chunk;
    for (int64_t t = 0; t < p.tokens; ++t) {
      chunk.tokens.push_back(static_cast<int32_t>(rng.next() % static_cast<uint64_t>(vocab)));
    }
    chunk.cached_tokens = p.context - p.tokens;
    if (!allocator.grow(chunk.block_table, p.context + extra, block_size)) {
      throw InputError("bench --profile: the KV cache cannot hold " + std::to_string(p.batch) +
                       " sequences of " + std::to_string(p.context + extra) + " tokens");
    }
    batch.sequences.push_back(std::move(chunk));
  }
  return batch;
}

// Device time where the backend measures it (CUDA events), else host wall time (the CPU).
double device_time_of(Backend& backend, const ForwardBatch& batch,
                      const std::vector<SampleSpec>& greedy, std::vector<int32_t>& ids) {
  const auto start = std::chrono::steady_clock::now();
  ids = backend.forward_sample(batch, greedy);
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double device_s = backend.last_forward_device_s();
  return device_s >= 0 ? device_s : wall_s;
}

}  // namespace

namespace {
std::vector<ProfilePoint> standard_grid() {
  std::vector<ProfilePoint> grid;
  const std::pair<int64_t, int64_t> prefills[] = {{1, 128},  {1, 512},  {1, 1024}, {1, 2048},
                                                  {1, 4096}, {2, 1024}, {4, 512},  {8, 256}};
  for (auto [batch, tokens] : prefills) grid.push_back({true, batch, tokens, tokens});
  for (int64_t context : kDecodeContexts) {
    for (int64_t batch : kDecodeBatches) grid.push_back({false, batch, 1, context});
  }
  // Prefills between 128 and 512 tokens, the sizes of chunked prefill in serving: cuBLASLt's
  // GEMMs there grow about linearly with the rows (H200 serving iterations, MEASUREMENTS §24),
  // which the multiples of 512 alone do not show. Last, so the points above keep their splits.
  for (int64_t tokens : {160, 192, 224, 256, 320, 384, 448}) {
    grid.push_back({true, 1, tokens, tokens});
  }
  return grid;
}

// Large batches: prefills of 8-32 prompts of 1024 tokens and of prompts of 2048-8192 tokens (up
// to 32768 tokens a pass), decode of 96, 128 and 256 sequences; ordered so that every third point
// (held out) is a shape of its own: 32 × 1024, 4 × 2048 and 256 sequences.
std::vector<ProfilePoint> large_batch_grid() {
  std::vector<ProfilePoint> grid;
  const std::pair<int64_t, int64_t> prefills[] = {{8, 1024}, {2, 4096},  {32, 1024},
                                                  {1, 8192}, {16, 1024}, {4, 2048}};
  for (auto [batch, tokens] : prefills) grid.push_back({true, batch, tokens, tokens});
  for (int64_t batch : kLargeDecodeBatches) grid.push_back({false, batch, 1, kLargeDecodeContext});
  return grid;
}

std::vector<ProfilePoint> long_context_grid() {
  std::vector<ProfilePoint> grid;
  for (int64_t context : kLongDecodeContexts) {
    for (int64_t batch : kLongDecodeBatches) grid.push_back({false, batch, 1, context});
  }
  for (auto [tokens, context] : kLongPrefillChunks) grid.push_back({true, 1, tokens, context});
  return grid;
}
// Every point of a grid, before the limits leave any out.
std::vector<ProfilePoint> grid_points(ProfileGrid which) {
  switch (which) {
    case ProfileGrid::standard:
      return standard_grid();
    case ProfileGrid::large_batch:
      return large_batch_grid();
    case ProfileGrid::long_context:
      break;
  }
  return long_context_grid();
}
}  // namespace

std::vector<ProfilePoint> profile_grid(int64_t max_context, int64_t kv_slots,
                                       int64_t max_batch_tokens, int64_t max_sequences,
                                       int64_t block_size, ProfileGrid which) {
  const std::vector<ProfilePoint> grid = grid_points(which);
  std::vector<ProfilePoint> fitting;
  for (const ProfilePoint& p : grid) {
    const int64_t extra = p.prefill ? 0 : kMaxDecodeSteps;  // decode steps grow the context
    const int64_t blocks_per_seq = (p.context + extra + block_size - 1) / block_size;
    const bool fits = p.batch <= max_sequences && p.batch * p.tokens <= max_batch_tokens &&
                      p.batch * blocks_per_seq * block_size <= kv_slots &&
                      (max_context <= 0 || p.context + extra <= max_context);
    if (fits) fitting.push_back(p);
  }
  for (size_t i = 0; i < fitting.size(); ++i) fitting[i].holdout = i % 3 == 2;
  return fitting;
}

ProfileGrid profile_grid_named(const std::string& name) {
  if (name == "standard") return ProfileGrid::standard;
  if (name == "long") return ProfileGrid::long_context;
  if (name == "large") return ProfileGrid::large_batch;
  throw InputError("--profile-grid takes standard, long or large, got '" + name + "'");
}

int64_t profile_kv_tokens(int64_t steps, ProfileGrid grid) {
  // Every point's sequences at their context, plus the steps a decode point takes (and the same
  // margin after a prefill).
  const int64_t extra = std::max(steps, kMaxDecodeSteps) + 16;
  int64_t tokens = 0;
  for (const ProfilePoint& p : grid_points(grid)) {
    tokens = std::max(tokens, p.batch * (p.context + extra));
  }
  return tokens;
}

int64_t profile_max_batch_tokens(ProfileGrid grid) {
  int64_t tokens = 0;
  for (const ProfilePoint& p : grid_points(grid)) tokens = std::max(tokens, p.batch * p.tokens);
  return tokens;
}

int64_t profile_max_sequences(ProfileGrid grid) {
  return grid == ProfileGrid::large_batch ? kLargeDecodeBatches[std::size(kLargeDecodeBatches) - 1]
                                          : 64;
}

std::vector<ProfileMeasurement> run_engine_profile(Backend& backend,
                                                   const std::vector<ProfilePoint>& points,
                                                   int64_t warmup, int64_t repeats, uint64_t seed) {
  if (warmup < 0 || repeats < 1 || warmup + repeats + 1 > kMaxDecodeSteps) {
    throw InputError("bench --profile: --warmup + --repeats must be at most " +
                     std::to_string(kMaxDecodeSteps - 1));
  }
  const KvCacheLayout& layout = backend.kv_layout();
  const int64_t vocab = backend.config().model.vocab_size;
  Xoshiro256 rng(seed);
  backend.fill_kv_cache_random(seed);
  // Decode points first, then the prefills, each written to its place in the grid: on the H200
  // the first decode points measured right after the long prefills ran up to 23% slower than the
  // same shapes later (the GPU's clock recovering from seconds of tensor-core load,
  // docs/MEASUREMENTS.md §24), which no per-step model can follow.
  std::vector<size_t> order;
  for (bool prefill : {false, true}) {
    for (size_t i = 0; i < points.size(); ++i) {
      if (points[i].prefill == prefill) order.push_back(i);
    }
  }
  std::vector<std::optional<ProfileMeasurement>> measured(points.size());
  for (size_t index : order) {
    const ProfilePoint& point = points[index];
    BlockAllocator allocator(layout.num_blocks);
    ForwardBatch batch = batch_of(point, point.prefill ? 0 : kMaxDecodeSteps, allocator,
                                  layout.block_size, vocab, rng);
    const std::vector<SampleSpec> greedy(static_cast<size_t>(point.batch));
    std::vector<int32_t> ids;
    std::vector<double> samples;
    backend.set_profiling(false);
    for (int64_t pass = 0; pass < warmup + repeats; ++pass) {
      const double s = device_time_of(backend, batch, greedy, ids);
      if (pass >= warmup) samples.push_back(s);
      if (!point.prefill) {  // the next step: each sequence one token further
        for (size_t i = 0; i < batch.sequences.size(); ++i) {
          batch.sequences[i].cached_tokens += 1;
          batch.sequences[i].tokens.assign(1, ids[i]);
        }
      }
    }
    backend.set_profiling(true);
    device_time_of(backend, batch, greedy, ids);
    measured[index] =
        ProfileMeasurement{point, timing_stats(samples), backend.last_forward_profile(),
                           backend.last_forward_routing(),
                           point.prefill ? point.context : point.context + warmup + repeats};
    backend.set_profiling(false);
  }
  std::vector<ProfileMeasurement> out;
  for (auto& m : measured) out.push_back(std::move(*m));
  return out;
}

}  // namespace inferlab::engine
