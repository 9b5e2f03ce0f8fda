#pragma once
// `inferlab bench --profile`: the engine's steps over a grid of prefill and decode shapes, each
// with its device time (median and spread) and its GPU time per kernel class, the data that
// `inferlab fit --engine` calibrates `predict --framework inferlab` on. Decode points do not
// prefill their context: the cache is filled with random values once (fill_kv_cache_random), and
// each sequence's block table covers `context` positions of its own blocks.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/backend.hpp"
#include "engine/engine_bench.hpp"

namespace inferlab::engine {

struct ProfilePoint {
  bool prefill = false;
  int64_t batch = 1;
  int64_t tokens = 1;    // new tokens per sequence (1 for decode)
  int64_t context = 1;   // tokens each sequence attends to (its prompt, for prefill)
  bool holdout = false;  // fixed by the grid before any fit: every third point
};

struct ProfileMeasurement {
  ProfilePoint point;
  TimingStats step;  // device time of one forward pass with sampling (graph replay where on)
  std::vector<KernelClassTime> kernels;  // an eager, profiled pass of the same shape
  RoutingStats routing;                  // that pass's routing (mixtures of experts)
  // The context that pass ran at: a decode point's passes each run a token further (warmup,
  // then the timed ones), so it is the point's context + warmup + repeats; a prefill's own.
  int64_t profiled_context = 0;
};

// The grids `bench --profile` measures.
//  standard: prefill 1 × {128, 512, 1024, 2048, 4096}, 2 × 1024, 4 × 512, 8 × 256 and 1 × {160,
//            192, 224, 256, 320, 384, 448}; decode batches {1, 2, 4, 8, 16, 32, 64} × contexts
//            {256, 1024, 4096}.
//  long:     long contexts, as serving long prompts meets them: decode batches {1, 4, 8, 16} ×
//            contexts {6000, 8192, 12000, 16384, 24000, 32768, 65536}, and prefill chunks of
//            2048 or 8192 tokens after a cached prefix, to contexts of 16k-128k.
//  large:    large batches: prefill 8, 16 and 32 × 1024, 1 × 8192, 2 × 4096, 4 × 2048 (up to
//            32768 tokens a pass: a mixture of experts' prefill past the one-launch GEMM, model/
//            engine_moe_rules.hpp); decode batches {96, 128, 256} at context 1024.
// Points whose sequences, tokens or contexts do not fit the limits are left out; then every
// third point (in that order) is held out.
enum class ProfileGrid { standard, long_context, large_batch };
// The grid `bench --profile-grid` names ("standard", "long", "large"); InputError for any other.
ProfileGrid profile_grid_named(const std::string& name);
std::vector<ProfilePoint> profile_grid(int64_t max_context, int64_t kv_slots,
                                       int64_t max_batch_tokens, int64_t max_sequences,
                                       int64_t block_size,
                                       ProfileGrid grid = ProfileGrid::standard);

// Tokens the cache must hold for the grid's largest decode point (plus the steps it takes).
int64_t profile_kv_tokens(int64_t steps, ProfileGrid grid = ProfileGrid::standard);
// The largest pass of the grid, in tokens, and its most sequences.
int64_t profile_max_batch_tokens(ProfileGrid grid);
int64_t profile_max_sequences(ProfileGrid grid);

// Measures every point: `repeats` timed passes after `warmup` untimed ones (a decode point's
// context grows by one per pass), then one profiled pass.
std::vector<ProfileMeasurement> run_engine_profile(Backend& backend,
                                                   const std::vector<ProfilePoint>& points,
                                                   int64_t warmup, int64_t repeats, uint64_t seed);

}  // namespace inferlab::engine
