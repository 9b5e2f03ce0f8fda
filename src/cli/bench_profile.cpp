// `inferlab bench --profile`: the engine's steps over the profile grid with the given switches
// (engine/engine_profile.hpp), written as the engine-profile JSON that `fit --engine` reads.
#include <chrono>
#include <ctime>

#include "cli/bench_args.hpp"
#include "engine/cuda_backend.hpp"
#include "engine/engine_profile.hpp"
#include "fit/engine_profile.hpp"
#include "report/engine_profile_report.hpp"
#include "util/error.hpp"

namespace inferlab::cli {

namespace {

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

}  // namespace

void run_profile(const BenchArgs& a, OutputFormat format) {
  EngineOptions options = batch_engine_options(a);
  const engine::ProfileGrid grid = engine::profile_grid_named(a.profile_grid);
  const int64_t kMaxTokens = engine::profile_max_batch_tokens(grid);
  const int64_t kMaxSequences = engine::profile_max_sequences(grid);
  // The grid keeps to what the pool holds: on a GPU the largest point's need where memory allows,
  // on the CPU (tiny models, tests) a small cache.
  options.kv_tokens = options.device == "cuda" ? 0 : 8192;
  options.kv_pool_tokens = engine::profile_kv_tokens(a.warmup + a.repeats + 1, grid);
  options.max_batch_tokens = kMaxTokens;
  options.max_sequences = kMaxSequences;
  const std::string device_name =
      options.device == "cuda" ? engine::cuda_device_name() : std::string("cpu");
  auto backend = engine::open_backend(a.model, options);
  const auto& layout = backend->kv_layout();
  const auto points =
      engine::profile_grid(backend->config().model.max_position_embeddings, layout.slots(),
                           kMaxTokens, kMaxSequences, layout.block_size, grid);
  if (points.empty()) throw InputError("bench --profile: no grid point fits this KV cache");
  const auto measured = engine::run_engine_profile(*backend, points, a.warmup, a.repeats, a.seed);
  EngineProfileSetup setup;
  // A shipped name as such; a config or checkpoint folder as the path given, which
  // `fit`/`validate --engine` read the shapes from (engine_profile.hpp resolves it).
  setup.model = profile_model_field(a.model, backend->config().model.name);
  setup.hardware = options.device == "cuda" ? hardware_for_compare(a, device_name) : "cpu";
  setup.device_name = device_name;
  setup.measured_at = utc_now();
  setup.switches = engine_switches_json(engine_switches_of(options));
  const nlohmann::json json = engine_profile_json(setup, measured);
  emit(json, engine_profile_text(json), "", format);
}

}  // namespace inferlab::cli
