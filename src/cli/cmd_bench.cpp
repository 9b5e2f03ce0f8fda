// `inferlab bench`: the engine's prefill and decode timed on a batch of random prompts, with the
// GPU time per kernel class; --compare sets `predict --framework inferlab` beside it.
#include <fmt/format.h>

#include <optional>

#include "cli/bench_args.hpp"
#include "cli/commands.hpp"
#include "cli/predict_run.hpp"
#include "engine/cuda_backend.hpp"
#include "engine/engine_bench.hpp"
#include "engine/quant/quantized_model.hpp"
#include "engine/speculative_bench.hpp"
#include "report/emit.hpp"
#include "report/engine_bench_report.hpp"
#include "report/speculative_report.hpp"
#include "util/error.hpp"

namespace inferlab::cli {

namespace {

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
  auto target = engine::open_backend(a.model, options);
  std::unique_ptr<engine::Backend> draft;
  if (!draft_model.empty()) draft = engine::open_backend(draft_model, options);
  const auto costs = engine::measure_speculative_costs(*target, draft.get(), speculative, a.input,
                                                       a.repeats, a.seed);
  const std::string device_name =
      options.device == "cuda" ? engine::cuda_device_name() : std::string("cpu");
  nlohmann::json json =
      speculative_costs_json(target->config().model.name, draft ? draft->config().model.name : "",
                             device_name, speculative, costs);
  emit(json, speculative_costs_text(json), "", format);
}

void run_bench(const BenchArgs& a) {
  OutputFormat format = parse_output_format(a.format);
  check_bench_sizes(a);
  check_bench_context(a);
  if (!a.speculative.empty()) return run_speculative_bench(a, format);
  if (a.ablation) return run_ablation(a, format);
  if (a.profile) return run_profile(a, format);
  const EngineOptions options = batch_engine_options(a);
  const std::string device_name =
      options.device == "cuda" ? engine::cuda_device_name() : std::string("cpu");
  std::optional<RequestPrediction> predicted;
  CommonArgs common;
  if (a.compare) {  // checked before the weights load, so a bad --hardware fails fast
    common = predict_args_for(a, options, hardware_for_compare(a, device_name));
    load_cost_model(common);
  }
  auto backend = engine::open_backend(a.model, options);
  const engine::BenchOptions bench = bench_options(a, !a.no_kernels && options.device == "cuda");
  const engine::BenchResult result = engine::run_engine_bench(*backend, bench);
  if (a.compare) predicted = run_prediction(common, a.batch, a.input, a.output).prediction;

  BenchSetup setup;
  setup.model = backend->config().model.name;
  setup.device = options.device;
  setup.device_name = device_name;
  setup.options = bench;
  setup.cuda_graphs = options.cuda_graphs && options.device == "cuda";
  setup.tp = options.tp;
  const bool gpu = options.device == "cuda";
  setup.weight_bytes = gpu ? engine::quantized_weight_bytes(backend->config(), options.quant)
                           : backend->config().model.total_params() * 4;
  setup.kv_bytes_per_element = !gpu ? 4 : options.quant.kv == DType::bf16 ? 2 : 1;
  setup.quant = options.quant.describe();
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
  cmd->add_option("--max-model-len", args->max_model_len,
                  "Longest --input + --output accepted (default: the model's context)");
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
                "The staircase from the plain path to every optimization on, then each number "
                "format, each step measured beside predict's figure with the same switches (CUDA)");
  cmd->add_flag("--profile", args->profile,
                "The engine's steps over a grid of prefill and decode shapes with the given "
                "switches, per kernel class (the data `fit --engine` calibrates on)");
  cmd->add_option("--profile-grid", args->profile_grid,
                  "--profile's grid: standard, long (decode at 6k-64k contexts, prefill "
                  "chunks after cached prefixes up to 128k) or large (prefills of up to 32k "
                  "tokens a pass, decode of 128 and 256 sequences)")
      ->capture_default_str();
  cmd->add_option("--cuda-graphs", args->cuda_graphs,
                  "on: decode steps replay a CUDA graph per padded batch")
      ->capture_default_str();
  add_engine_switches(cmd, args->switches);
  cmd->add_option("--speculative", args->speculative,
                  "ngram,k=K or draft=MODEL,k=K: time a decode step, the verification of k + 1 "
                  "tokens and a drafting step at a context of --input tokens (--repeats each)")
      ->capture_default_str();
  cmd->add_option("--format", args->format, "table, json")->capture_default_str();
  cmd->callback([args] { run_bench(*args); });
}

}  // namespace inferlab::cli
