// `inferlab bench`: the engine's prefill and decode timed on a batch of random prompts, with the
// GPU time per kernel class; --compare sets `predict --framework inferlab` beside it.
#include <fmt/format.h>

#include <optional>

#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "cli/engine_args.hpp"
#include "cli/predict_run.hpp"
#include "engine/cuda_backend.hpp"
#include "engine/engine_bench.hpp"
#include "engine/speculative_bench.hpp"
#include "report/ablation_report.hpp"
#include "report/emit.hpp"
#include "report/engine_bench_report.hpp"
#include "report/speculative_report.hpp"
#include "util/error.hpp"

namespace inferlab::cli {

namespace {

struct BenchArgs {
  std::string format = "table";
  std::string model, device = "auto", hardware;
  int64_t batch = 1, input = 512, output = 128, repeats = 5, warmup = 1;
  uint64_t seed = 0;
  bool compare = false, no_kernels = false, ablation = false;
  std::string cuda_graphs = "off";
  std::string speculative;  // ngram,k=K or draft=MODEL,k=K: time speculation's steps instead
  double gpu_memory_utilization = 0.90;
};

void check_sizes(const BenchArgs& a) {
  if (a.batch < 1 || a.batch > 4096) throw InputError("--batch must be in [1, 4096]");
  if (a.input < 1 || a.input > 1'000'000) throw InputError("--input must be in [1, 1000000]");
  if (a.output < 1 || a.output > 1'000'000) throw InputError("--output must be in [1, 1000000]");
  if (a.repeats < 1 || a.repeats > 10'000) throw InputError("--repeats must be in [1, 10000]");
  if (a.warmup < 0 || a.warmup > 1'000) throw InputError("--warmup must be in [0, 1000]");
  if (!(a.gpu_memory_utilization > 0.0 && a.gpu_memory_utilization <= 1.0)) {
    throw InputError("--gpu-memory-utilization must be in (0, 1]");
  }
  if (a.batch * a.input > 262'144) {
    throw InputError(fmt::format("--batch × --input is {} tokens in one prefill; at most 262144",
                                 a.batch * a.input));
  }
}

// The hardware the prediction prices: --hardware, else the GPU this runs on.
std::string hardware_for_compare(const BenchArgs& a, const std::string& device_name) {
  if (!a.hardware.empty()) return a.hardware;
  if (device_name.find("H200") != std::string::npos) return "h200";
  if (device_name.find("H100") != std::string::npos) return "h100-sxm";
  throw InputError("--compare: cannot tell which hardware '" + device_name +
                   "' is; give --hardware NAME");
}

std::string predict_model_name(const std::string& model) {
  return is_checkpoint_folder(model) ? (std::filesystem::path(model) / "config.json").string()
                                     : model;
}

// The engine options and the bench sizes of a --batch × (--input + --output) run.
EngineOptions batch_engine_options(const BenchArgs& a) {
  EngineOptions options;
  options.device = resolve_device(a.device);
  options.seed = a.seed;
  options.kv_tokens = a.batch * (a.input + a.output);
  options.max_batch_tokens = std::max<int64_t>(4096, a.batch * a.input);
  options.max_sequences = a.batch;
  options.gpu_memory_utilization = a.gpu_memory_utilization;
  options.cuda_graphs = parse_on_off("--cuda-graphs", a.cuda_graphs);
  return options;
}

engine::BenchOptions bench_options(const BenchArgs& a, bool profile_kernels) {
  engine::BenchOptions bench;
  bench.batch = a.batch;
  bench.input_tokens = a.input;
  bench.output_tokens = a.output;
  bench.repeats = a.repeats;
  bench.warmup = a.warmup;
  bench.seed = a.seed;
  bench.profile_kernels = profile_kernels;
  return bench;
}

// --speculative: the target's decode step, its verification of k + 1 tokens and a drafting
// step at a context of --input tokens, and the speed-up they give at each acceptance rate.
void run_speculative_bench(const BenchArgs& a, OutputFormat format) {
  if (a.batch != 1) throw InputError("--speculative times one sequence; drop --batch");
  std::string draft_model;
  const auto speculative = engine::parse_speculative(a.speculative, draft_model);
  if (!draft_model.empty()) engine::load_llama_config(draft_model);  // fails before any load
  EngineOptions options = batch_engine_options(a);                   // batch 1
  options.kv_tokens = a.input + speculative.k + 1;
  options.kv_pool_tokens = options.kv_tokens;  // leave the GPU's memory to the draft model too
  auto target = make_engine_backend(a.model, options);
  std::unique_ptr<engine::Backend> draft;
  if (!draft_model.empty()) draft = make_engine_backend(draft_model, options);
  const auto costs = engine::measure_speculative_costs(*target, draft.get(), speculative, a.input,
                                                       a.repeats, a.seed);
  const std::string device_name =
      options.device == "cuda" ? engine::cuda_device_name() : std::string("cpu");
  nlohmann::json json =
      speculative_costs_json(target->config().model.name, draft ? draft->config().model.name : "",
                             device_name, speculative, costs);
  emit(json, speculative_costs_text(json), "", format);
}

// One step of the ablation staircase: the engine as built with these switches.
struct AblationStep {
  const char* name;
  bool gemv, cuda_graphs;
};
constexpr AblationStep kAblation[] = {
    {"plain: cuBLASLt for every projection, eager launches", false, false},
    {"+ GEMV kernel for decode projections (1-2 rows)", true, false},
    {"+ CUDA graphs for decode steps", true, true},
};

double sum_of(const std::vector<engine::KernelClassTime>& kernels,
              double engine::KernelClassTime::*field) {
  double total = 0;
  for (const auto& k : kernels) total += k.*field;
  return total;
}

// --ablation: every step of kAblation measured (medians) beside predict's figure with the same
// switches; achieved HBM bandwidth of a decode step (bytes its kernels move / its time) against
// the probe's measured read bandwidth, and prefill's tensor FLOP rate against the bf16 peak.
void run_ablation(const BenchArgs& a, OutputFormat format) {
  EngineOptions options = batch_engine_options(a);
  if (options.device != "cuda") throw InputError("--ablation needs --device cuda");
  const std::string device_name = engine::cuda_device_name();
  CommonArgs common;
  common.model = predict_model_name(a.model);
  common.hardware = hardware_for_compare(a, device_name);
  common.framework = "inferlab";
  // Profiled passes: the bytes and FLOPs each step's kernels move.
  const engine::BenchOptions bench = bench_options(a, /*profile_kernels=*/true);
  nlohmann::json steps = nlohmann::json::array();
  for (const AblationStep& step : kAblation) {
    options.gemv = step.gemv;
    options.cuda_graphs = step.cuda_graphs;
    common.cuda_graphs = step.cuda_graphs ? "on" : "off";
    const PredictRun predicted = run_prediction(common, a.batch, a.input, a.output);
    engine::BenchResult result;
    {
      auto backend = make_engine_backend(a.model, options);
      result = engine::run_engine_bench(*backend, bench);
    }
    const auto& spec = predicted.hw.spec;
    const double read_bps = spec.profile ? spec.profile->hbm_read_bps : spec.memory_bandwidth_bps;
    const double peak_bf16 = spec.peak_flops(DType::bf16).value_or(0.0);
    // A replayed graph is not profiled per kernel; its kernels are the previous step's.
    double decode_bytes = sum_of(result.decode_kernels, &engine::KernelClassTime::bytes);
    if (decode_bytes == 0 && !steps.empty()) decode_bytes = steps.back()["decode_bytes"];
    const double prefill_flops = sum_of(result.prefill_kernels, &engine::KernelClassTime::flops);
    const double decode_bps = decode_bytes / result.decode_step.median_s;
    const double prefill_flops_per_s = prefill_flops / result.prefill.median_s;
    steps.push_back(
        {{"step", step.name},
         {"gemv", step.gemv},
         {"cuda_graphs", step.cuda_graphs},
         {"prefill_ms", result.prefill.median_s * 1e3},
         {"prefill_min_ms", result.prefill.min_s * 1e3},
         {"prefill_max_ms", result.prefill.max_s * 1e3},
         {"decode_step_ms", result.decode_step.median_s * 1e3},
         {"decode_step_min_ms", result.decode_step.min_s * 1e3},
         {"decode_step_max_ms", result.decode_step.max_s * 1e3},
         {"decode_bytes", decode_bytes},
         {"decode_bytes_per_s", decode_bps},
         {"decode_of_probe_hbm_read", read_bps > 0 ? decode_bps / read_bps : 0.0},
         {"prefill_flops_per_s", prefill_flops_per_s},
         {"prefill_of_peak_bf16", peak_bf16 > 0 ? prefill_flops_per_s / peak_bf16 : 0.0},
         {"predicted_prefill_ms", predicted.prediction.prefill_s * 1e3},
         {"predicted_decode_step_ms", predicted.prediction.tpot_s * 1e3},
         {"decode_kernels", kernel_classes_json(result.decode_kernels)}});
  }
  nlohmann::json json = {{"model", a.model},
                         {"device_name", device_name},
                         {"hardware", common.hardware},
                         {"batch", a.batch},
                         {"input_tokens", a.input},
                         {"output_tokens", a.output},
                         {"repeats", a.repeats},
                         {"steps", steps}};
  emit(json, ablation_text(json), "", format);
}

void run_bench(const BenchArgs& a) {
  OutputFormat format = parse_output_format(a.format);
  check_sizes(a);
  if (!a.speculative.empty()) return run_speculative_bench(a, format);
  if (a.ablation) return run_ablation(a, format);
  const EngineOptions options = batch_engine_options(a);
  const std::string device_name =
      options.device == "cuda" ? engine::cuda_device_name() : std::string("cpu");
  std::optional<RequestPrediction> predicted;
  CommonArgs common;
  if (a.compare) {  // checked before the weights load, so a bad --hardware fails fast
    common.model = predict_model_name(a.model);
    common.hardware = hardware_for_compare(a, device_name);
    common.framework = "inferlab";
    common.cuda_graphs = a.cuda_graphs;
    load_cost_model(common);
  }
  auto backend = make_engine_backend(a.model, options);
  const engine::BenchOptions bench = bench_options(a, !a.no_kernels && options.device == "cuda");
  const engine::BenchResult result = engine::run_engine_bench(*backend, bench);
  if (a.compare) predicted = run_prediction(common, a.batch, a.input, a.output).prediction;

  BenchSetup setup;
  setup.model = backend->config().model.name;
  setup.device = options.device;
  setup.device_name = device_name;
  setup.options = bench;
  setup.cuda_graphs = options.cuda_graphs && options.device == "cuda";
  const int64_t bytes_per_parameter = options.device == "cuda" ? 2 : 4;
  setup.weight_bytes = backend->config().model.total_params() * bytes_per_parameter;
  setup.kv_bytes_per_element = bytes_per_parameter;
  nlohmann::json json = bench_json(setup, result, predicted);
  emit(json, bench_text(setup, result, predicted), "", format);
}

}  // namespace

void register_bench(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Time the engine's prefill and decode (medians, spread, GPU time per kernel)");
  cmd->add_option("--model", args->model, "Checkpoint folder, or a shipped model (random weights)")
      ->required();
  cmd->add_option("--batch", args->batch, "Sequences per batch")->capture_default_str();
  cmd->add_option("--input", args->input, "Prompt tokens per sequence")->capture_default_str();
  cmd->add_option("--output", args->output, "Generated tokens per sequence")->capture_default_str();
  cmd->add_option("--repeats", args->repeats, "Timed prefills")->capture_default_str();
  cmd->add_option("--warmup", args->warmup, "Untimed prefills first")->capture_default_str();
  cmd->add_option("--seed", args->seed, "Random prompts (and weights of a shipped model)")
      ->capture_default_str();
  cmd->add_option("--device", args->device, "auto, cuda or cpu")->capture_default_str();
  cmd->add_option("--gpu-memory-utilization", args->gpu_memory_utilization,
                  "Share of the GPU's memory the engine may take")
      ->capture_default_str();
  cmd->add_flag("--compare", args->compare,
                "Put `predict --framework inferlab` for the same model and sizes beside it");
  cmd->add_option("--hardware", args->hardware,
                  "Hardware for --compare (default: the GPU this runs on)");
  cmd->add_flag("--no-kernels", args->no_kernels, "Skip the per-kernel profiled passes");
  cmd->add_flag("--ablation", args->ablation,
                "The staircase from the plain path to every optimization on, each step measured "
                "beside predict's figure with the same switches (CUDA)");
  cmd->add_option("--cuda-graphs", args->cuda_graphs,
                  "on: decode steps replay a CUDA graph per padded batch (not yet measured)")
      ->capture_default_str();
  cmd->add_option("--speculative", args->speculative,
                  "ngram,k=K or draft=MODEL,k=K: time a decode step, the verification of k + 1 "
                  "tokens and a drafting step at a context of --input tokens (--repeats each)")
      ->capture_default_str();
  cmd->add_option("--format", args->format, "table, json")->capture_default_str();
  cmd->callback([args] { run_bench(*args); });
}

}  // namespace inferlab::cli
