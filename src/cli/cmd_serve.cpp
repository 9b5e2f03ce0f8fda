#include <fmt/format.h>

#include <algorithm>

#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "cli/engine_args.hpp"
#include "cli/serve_args.hpp"
#include "cli/slo_grammar.hpp"
#include "engine/quant/formats.hpp"
#include "engine/serving_executor.hpp"
#include "report/emit.hpp"
#include "report/serve_report.hpp"
#include "serve/capacity.hpp"
#include "serve/metrics.hpp"
#include "serve/replay_executor.hpp"
#include "serve/serving_setup.hpp"
#include "serve/simulated_executor.hpp"

namespace inferlab::cli {

namespace {
struct ServeCommandArgs {
  CommonArgs common;
  ServeArgs serve;
  std::string slo, requests_csv, iterations_csv, svg_prefix, kernel_profile_csv;
  std::string replay_iterations;  // --executor replay: a measured run's iterations CSV
  std::string executor = "sim", device = "auto", gemm_warmup = "on";
  int64_t kv_tokens = 0;
  TpProcessArgs tp_processes;  // --executor engine: where --tp's ranks run
};

// The engine's run of the same schedule: the model on --device, its KV pool holding
// --kv-tokens (default on a GPU: what its memory holds, less the draft model's share where
// --speculative names one; the CPU needs it given), each iteration timed on the wall clock.
// `scheduler.kv_blocks` becomes the pool's size.
ServeResult run_on_engine(const ServeCommandArgs& a, const std::vector<ServeRequest>& requests,
                          SchedulerConfig& scheduler, const IterationCost& cost) {
  // draft=ngram: prompt lookup on the host; any other name: a draft model beside the target.
  std::string draft_model =
      scheduler.speculative.k > 0 ? parse_speculative(a.serve.speculative).draft_model : "";
  if (draft_model == "ngram") draft_model.clear();
  EngineOptions options;
  options.device = resolve_device(a.device);
  options.seed = a.serve.seed;
  options.block_size = scheduler.block_size;
  // Without --kv-tokens the GPU's pool is what --gpu-memory-utilization leaves, which need not
  // equal the simulated GPU's estimate; the run reports the pool it had (scheduler.kv_blocks), and
  // a comparison with the simulation passes the same --kv-tokens to both.
  options.kv_tokens = a.kv_tokens > 0 ? a.kv_tokens : 0;
  options.kv_pool_tokens = options.kv_tokens;  // the simulated run is given the same pool
  // --tp splits the engine over that many GPUs (or CPU ranks), as the simulation assumes.
  options.tp = a.common.tp;
  apply_tp_process_switches(a.tp_processes, options);
  if (options.device == "cpu" && a.kv_tokens <= 0) {
    throw InputError("--executor engine --device cpu needs --kv-tokens (the CPU cache's size)");
  }
  // Buffers for the largest iteration the schedule can form; requests past --max-model-len are
  // rejected by the scheduler and never reach the engine.
  int64_t longest = 0;
  for (const auto& r : requests) {
    if (!exceeds_max_model_len(r, scheduler)) {
      longest = std::max(longest, r.prompt_tokens + r.output_tokens);
    }
  }
  options.max_batch_tokens = max_iteration_tokens(scheduler, longest);
  options.max_sequences = scheduler.max_num_seqs;
  options.gpu_memory_utilization = a.common.gpu_memory_utilization;
  options.cuda_graphs = a.common.cuda_graphs == "on";  // decode-only iterations replay graphs
  // Every GEMM shape an iteration can have, run before the first request (CUDA; the flag's value
  // was checked in the command's callback).
  if (a.gemm_warmup == "on") options.warm_gemm_rows = scheduler.max_num_batched_tokens;
  // The simulator's number formats, run for real, in the engine commands' grammar.
  apply_number_formats(a.common.weights, a.common.kv, a.common.activations, options);
  const std::string model = a.common.model;
  const EngineBackends backends = engine::open_engine(model, draft_model, options);
  scheduler.kv_blocks = backends.target->kv_layout().num_blocks;
  engine::ServingExecutor executor(*backends.target, requests, a.serve.seed);
  if (backends.draft) executor.set_draft_model(*backends.draft);
  executor.profile_kernels(!a.kernel_profile_csv.empty());
  // Each measured iteration also priced by the simulator (the iterations CSV's simulated_ms).
  PricedExecutor priced(executor, cost, scheduler);
  ServeResult result = run_serving(requests, scheduler, priced);
  if (!a.kernel_profile_csv.empty()) {
    std::ofstream out = open_output(a.kernel_profile_csv, "--kernel-profile-csv");
    out << "iteration,prefill_tokens,decode_seqs,class,ms,launches\n";
    for (const auto& it : executor.kernel_profiles()) {
      for (const auto& k : it.classes) {
        out << fmt::format("{},{},{},{},{:.4f},{}\n", it.iteration, it.prefill_tokens,
                           it.decode_seqs, k.name, k.seconds * 1e3, k.launches);
      }
    }
  }
  return result;
}

// --slo sets the goodput targets; without it every finished request counts.
SloTargets goodput_slo(const std::string& text) {
  SloTargets slo;
  if (!text.empty()) {
    const CapacitySlo targets = parse_capacity_slo(text);
    slo.ttft_s = targets.ttft_p99_s;
    slo.tpot_s = targets.tpot_p99_s;
  }
  return slo;
}

// --requests-csv, --iterations-csv and --svg-prefix, where given.
void write_serve_files(const ServeCommandArgs& a, const ServeResult& result,
                       const std::string& title) {
  if (!a.requests_csv.empty()) {
    open_output(a.requests_csv, "--requests-csv") << serve_requests_csv(result);
  }
  if (!a.iterations_csv.empty()) {
    open_output(a.iterations_csv, "--iterations-csv") << serve_iterations_csv(result);
  }
  if (a.svg_prefix.empty()) return;
  for (const auto& [suffix, chart] : serve_charts(result, title)) {
    open_output(a.svg_prefix + suffix, "--svg-prefix") << render_xy_chart_svg(chart);
  }
}
}  // namespace

void register_serve(CLI::App& app) {
  auto args = std::make_shared<ServeCommandArgs>();
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Simulate a vLLM-style server over a request stream: iteration-level scheduling, paged "
      "KV cache, preemption, prefix caching, speculative decoding; latency percentiles and "
      "throughput");
  add_model_options(cmd, args->common);
  add_hardware_options(cmd, args->common);
  add_sustained_option(cmd, args->common);
  add_format_option(cmd, args->common);
  add_serve_options(cmd, args->serve, true);
  cmd->add_option("--slo", args->slo,
                  "Per-request targets for goodput: ttft_p99=MS,tpot_p99=MS (ms, or 's' unit)");
  cmd->add_option("--requests-csv", args->requests_csv, "Write one row per request here");
  cmd->add_option("--iterations-csv", args->iterations_csv, "Write one row per iteration here");
  cmd->add_option("--kernel-profile-csv", args->kernel_profile_csv,
                  "With --executor engine: profile every iteration and write its GPU time per "
                  "kernel class here (iterations run eagerly, so they take longer)");
  cmd->add_option("--svg-prefix", args->svg_prefix,
                  "Write PREFIX-ttft-cdf.svg, PREFIX-tpot-cdf.svg and PREFIX-kv.svg");
  cmd->add_option("--executor", args->executor,
                  "sim: iterations priced by the cost model; engine: run on inferlab's engine "
                  "(--model a checkpoint folder or a shipped name, random weights); replay: a "
                  "measured run's iterations again (--replay-iterations), each also priced")
      ->capture_default_str();
  cmd->add_option("--replay-iterations", args->replay_iterations,
                  "With --executor replay: the iterations CSV of a measured run (same flags and "
                  "workload); its iterations are formed again, each priced by the cost model");
  cmd->add_option("--device", args->device, "With --executor engine: auto, cuda or cpu")
      ->capture_default_str();
  cmd->add_option("--kv-tokens", args->kv_tokens,
                  "KV cache size in tokens for both executors (default: the GPU's budget)");
  cmd->add_option("--gemm-warmup", args->gemm_warmup,
                  "With --executor engine on a GPU, on|off: run every GEMM shape up to "
                  "--max-num-batched-tokens rows before the first request")
      ->capture_default_str();
  add_tp_process_switches(cmd, args->tp_processes);
  cmd->callback([args] {
    const auto& a = *args;
    OutputFormat format = parse_output_format(a.common.format);
    if (a.executor != "sim" && a.executor != "engine" && a.executor != "replay") {
      throw InputError("unknown --executor '" + a.executor + "'; known: sim, engine, replay");
    }
    if ((a.executor == "replay") != !a.replay_iterations.empty()) {
      throw InputError("--executor replay and --replay-iterations FILE go together");
    }
    parse_on_off("--gemm-warmup", a.gemm_warmup);  // checked for both executors
    if (!a.kernel_profile_csv.empty() && a.executor != "engine") {
      throw InputError(
          "--kernel-profile-csv needs --executor engine (the simulator runs no kernels)");
    }
    ModelConfig model = load_model(
        is_checkpoint_folder(a.common.model) ? a.common.model + "/config.json" : a.common.model);
    LoadedHardware hw = load_cost_model(a.common);
    PredictOptions o = to_predict_options(a.common);
    SchedulerConfig scheduler = make_scheduler_config(a.serve, model.max_position_embeddings);
    const std::unique_ptr<ModelConfig> draft = load_draft_model(a.serve);
    const SloTargets slo = goodput_slo(a.slo);
    std::vector<ServeRequest> requests = make_workload(a.serve, a.serve.rate);
    KvBudget kv = size_kv_cache(scheduler, model, hw.spec, o);
    if (a.kv_tokens < 0) throw InputError("--kv-tokens must be positive");
    if (a.kv_tokens > 0) {  // the simulated run and the engine's get the same pool
      scheduler.kv_blocks = (a.kv_tokens + scheduler.block_size - 1) / scheduler.block_size;
    }
    const ServeSetupView setup{model, hw.spec, hw.cost->name(), o.tp, scheduler, kv, hw.sustained};
    if (!kv.fits()) {  // not fitting is a result: say so with the numbers
      const std::string text = serve_not_fitting_text(setup);
      emit(serve_setup_json(setup), text, text, format);
      return;
    }
    PredictedIterationCost cost(model, hw.spec, *hw.cost, o, load_host_overhead(), draft.get());
    cost.set_graph_batch_limit(scheduler.max_num_seqs);
    ServeResult result;
    if (a.executor == "engine") {
      result = run_on_engine(a, requests, scheduler, cost);
    } else if (a.executor == "replay") {
      // The measured iterations again, each priced by the cost model (simulated_ms).
      ReplayExecutor replay(load_measured_iterations(a.replay_iterations), scheduler);
      PricedExecutor priced(replay, cost, scheduler);
      result = run_serving(requests, scheduler, priced);
      if (replay.remaining() > 0) {
        throw InputError(
            fmt::format("the replay ended with {} measured iterations left: the "
                        "flags or the workload differ from the measured run's",
                        replay.remaining()));
      }
    } else {
      result = simulate_serving(requests, scheduler, cost);
    }
    const ServeSummary s = summarize(result, slo);
    write_serve_files(
        a, result, fmt::format("{} on {}, {}", model.name, hw.spec.name, scheduler.max_num_seqs));
    kv.blocks = scheduler.kv_blocks;  // --kv-tokens, or the engine's pool, where they set it
    nlohmann::json json = serve_json(setup, s);
    std::string text = serve_text(setup, s);
    json["executor"] = a.executor;
    if (a.executor == "engine") {
      json["device"] = resolve_device(a.device);
      text +=
          fmt::format("\nexecutor: inferlab's engine on {} (iterations timed on the wall clock)\n",
                      resolve_device(a.device));
    }
    emit(json, text, serve_latency_table(s).to_csv(), format);
  });
}

}  // namespace inferlab::cli
