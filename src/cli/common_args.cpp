#include "cli/common_args.hpp"

#include <fmt/format.h>

#include <iostream>
#include <map>

#include "util/error.hpp"

namespace inferlab::cli {

void add_format_option(CLI::App* app, CommonArgs& args) {
  app->add_option("--format", args.format, "Output: table, json or csv")->capture_default_str();
}

void add_hardware_options(CLI::App* app, CommonArgs& args) {
  app->add_option("--hardware", args.hardware, "GPU name (see `inferlab hardware`) or sheet path")
      ->capture_default_str();
  app->add_option("--profile", args.profile,
                  "Ceilings: auto (the shipped measured profile if any), none (spec sheet), or a "
                  "profile path")
      ->capture_default_str();
  app->add_option("--cost", args.cost,
                  "Cost model: auto (calibrated where a calibration applies, else roofline), "
                  "roofline, calibrated")
      ->capture_default_str();
  app->add_option("--calibration", args.calibration,
                  "Calibration to use: a calibrated GPU's name or a file (default: the GPU's "
                  "own, else one of the same architecture moved by spec-sheet ratios)");
  app->add_option("--delay-factor", args.delay_factor,
                  "Override delay factors, e.g. gemm=1.2,attention=2 (classes: gemm, gemv, "
                  "attention, norm, elementwise, softmax, communication)");
  app->add_option("--framework", args.framework,
                  "Kernel list of pytorch (eager, unfused), vllm (fused) or inferlab (this "
                  "project's engine)")
      ->capture_default_str();
  app->add_option("--engine-costs", args.engine_costs,
                  "With --framework inferlab: the engine's own calibration (inferlab fit "
                  "--engine): auto (data/engine_costs/<hardware>.json when shipped, else the "
                  "cost model above), none, or a file")
      ->capture_default_str();
}

void add_sustained_option(CLI::App* app, CommonArgs& args) {
  args.sustained = kSustainedAuto;
  app->add_option("--sustained", args.sustained,
                  "Calibrated model: the GPU's clock under sustained load (its power cap), which "
                  "slows a step's compute-bound kernels: auto (data/sustained/<hardware>.json "
                  "where shipped, else the calibration's), none, or a measurement file "
                  "(validation/sustained_clock.py or sustained_load.py output)")
      ->capture_default_str();
}

void add_model_options(CLI::App* app, CommonArgs& args, bool swept_elsewhere) {
  app->add_option("--model", args.model, "Model name (see `inferlab models`) or config.json path")
      ->capture_default_str();
  if (!swept_elsewhere) {
    app->add_option("--weights", args.weights, "Weight format: bf16 fp16 fp8 int8 int4");
    app->add_option("--tp", args.tp, "Tensor-parallel degree")->capture_default_str();
  }
  app->add_option("--kv", args.kv, "KV-cache format: bf16 fp16 fp8 int8");
  app->add_option("--activations", args.activations,
                  "GEMM input format; int8 or fp8 with the same --weights is W8A8");
  app->add_option("--cuda-graphs", args.cuda_graphs,
                  "on: one graph launch per step; off: "
                  "host launch overhead per kernel")
      ->capture_default_str();
  app->add_option("--flash-attention", args.flash_attention,
                  "off materializes the attention score matrix")
      ->capture_default_str();
  app->add_option("--gemv", args.gemv,
                  "With --framework inferlab: on (default) runs 1-2-row projections on the "
                  "engine's GEMV kernels, off on cuBLASLt");
  app->add_option("--fusion", args.fusion,
                  "With --framework inferlab: on fuses RMSNorm, SiLU x mul and the residual adds "
                  "into the engine's GEMVs (decode, the default, as the engine runs); off runs "
                  "them as kernels");
  app->add_option("--projection-layout", args.projection_layout,
                  "With --framework pytorch: separate (q, k, v, gate, up apart, as transformers "
                  "runs them; the default) or fused_qkv_gate_up (gpt-fast's one QKV and one "
                  "gate/up matrix)");
  app->add_option("--gpu-memory-utilization", args.gpu_memory_utilization,
                  "Fraction of GPU memory usable for weights, KV cache and activations")
      ->capture_default_str();
}

bool parse_on_off(const std::string& flag, const std::string& value) {
  if (value == "on") return true;
  if (value == "off") return false;
  throw InputError(flag + " takes on or off, got '" + value + "'");
}

int64_t resolve_max_model_len(int64_t requested, int64_t model_context) {
  if (requested < 0) {
    throw InputError(fmt::format("--max-model-len must be positive, got {}", requested));
  }
  if (requested > 0 && model_context > 0 && requested > model_context) {
    throw InputError(fmt::format("--max-model-len {} is past the model's context of {} tokens",
                                 requested, model_context));
  }
  return requested > 0 ? requested : model_context;
}

StepShape parse_step_shape(const std::string& phase, int64_t batch, int64_t tokens,
                           int64_t context) {
  constexpr int64_t kMax = int64_t{1} << 24;
  if (batch < 1 || batch > kMax) throw InputError("--batch must be in [1, 2^24]");
  if (phase == "prefill") {
    if (tokens < 1 || tokens > kMax) {
      throw InputError("--phase prefill needs --tokens N with N in [1, 2^24]");
    }
    return {Phase::prefill, batch, tokens, tokens};
  }
  if (phase == "decode") {
    if (context < 1 || context > kMax) {
      throw InputError("--phase decode needs --context L with L in [1, 2^24]");
    }
    return {Phase::decode, batch, 1, context};
  }
  throw InputError("--phase takes prefill or decode, got '" + phase + "'");
}

PredictOptions to_step_options(const CommonArgs& a, const StepShape& shape) {
  PredictOptions o = to_predict_options(a);
  o.batch = shape.batch;
  o.input_tokens = shape.context;
  o.output_tokens = 1;
  return o;
}

PredictOptions to_predict_options(const CommonArgs& a) {
  PredictOptions o;
  if (!a.weights.empty()) o.weights = parse_dtype(a.weights);
  if (!a.kv.empty()) o.kv = parse_dtype(a.kv);
  if (!a.activations.empty()) o.activations = parse_dtype(a.activations);
  o.framework = parse_framework(a.framework);
  for (const auto& [flag, value] :
       {std::pair{"--gemv", &a.gemv}, std::pair{"--fusion", &a.fusion}}) {
    if (!value->empty() && o.framework != Framework::inferlab) {
      throw InputError(std::string(flag) +
                       " is a switch of the inferlab engine; use it with --framework inferlab");
    }
  }
  if (!a.projection_layout.empty() && o.framework != Framework::pytorch) {
    throw InputError(
        "--projection-layout is a choice of --framework pytorch (vllm and inferlab "
        "always fuse QKV and gate/up)");
  }
  with_projection_layout(KernelPlan{}, a.projection_layout);  // an unknown name: InputError now
  o.projection_layout = a.projection_layout;
  if (!a.gemv.empty()) o.gemv = parse_on_off("--gemv", a.gemv);
  if (!a.fusion.empty()) o.fusion = parse_on_off("--fusion", a.fusion);
  o.rope_in_qkv = a.rope_in_qkv;
  o.early_cache_reads = a.early_cache_reads;
  o.cuda_graphs = parse_on_off("--cuda-graphs", a.cuda_graphs);
  o.flash_attention = parse_on_off("--flash-attention", a.flash_attention);
  o.tp = a.tp;
  o.gpu_memory_utilization = a.gpu_memory_utilization;
  return o;
}

CostRequest to_cost_request(const CommonArgs& args) {
  CostRequest request;
  request.method = parse_cost_method(args.cost);
  request.hardware = args.hardware;
  request.profile = args.profile;
  request.delay_overrides = args.delay_factor;
  request.calibration = args.calibration;
  request.sustained = args.sustained;
  if (args.framework == framework_name(Framework::inferlab)) {
    request.engine_costs = args.engine_costs;
  } else if (args.engine_costs != "auto") {
    throw InputError(
        "--engine-costs prices the inferlab engine's kernels; use it with "
        "--framework inferlab");
  }
  return request;
}

LoadedHardware load_cost_model(const CommonArgs& args) {
  return load_cost(to_cost_request(args));
}

void print_json(const nlohmann::json& json) {
  std::cout << json.dump(2) << '\n';
}

std::ofstream open_output(const std::string& path, const std::string& flag) {
  std::ofstream out(path);
  if (!out) {
    throw InputError(flag.empty() ? "cannot write '" + path + "'"
                                  : "cannot write " + flag + " file '" + path + "'");
  }
  return out;
}

}  // namespace inferlab::cli
