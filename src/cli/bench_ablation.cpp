// `inferlab bench --ablation`: the staircase from the plain path to every optimization on, each
// step measured (medians) beside `predict --framework inferlab` with the same switches. Then each
// number format on top of the full bf16 path, one at a time.
#include <fmt/format.h>

#include "cli/bench_args.hpp"
#include "cli/predict_run.hpp"
#include "engine/cuda_backend.hpp"
#include "report/ablation_report.hpp"
#include "report/engine_bench_report.hpp"
#include "util/error.hpp"

namespace inferlab::cli {

namespace {

struct AblationStep {
  const char* name;
  bool gemv, fusion, cuda_graphs, naive_attention;
  DType weights = DType::bf16, kv = DType::bf16, activations = DType::bf16;
};

// Cumulative to "+ CUDA graphs"; the rows after it each change one thing from that one.
constexpr AblationStep kAblation[] = {
    {"plain: cuBLASLt projections, naive attention, eager", false, false, false, true},
    {"+ flash attention (split-K decode, tiled prefill)", false, false, false, false},
    {"+ GEMV kernels for decode projections", true, false, false, false},
    {"+ fused decode (norm, SiLU×mul, residual in the GEMVs)", true, true, false, false},
    {"+ CUDA graphs for decode steps (all bf16 optimizations)", true, true, true, false},
    {"  with an fp8 KV cache", true, true, true, false, DType::bf16, DType::fp8},
    {"  with an int8 KV cache", true, true, true, false, DType::bf16, DType::int8},
    {"  with fp8 weights (fp8 tensor cores in prefill)", true, true, true, false, DType::fp8},
    {"  with int8 weights (W8A16)", true, true, true, false, DType::int8},
    {"  with int4 weights (GPTQ g128, W4A16)", true, true, true, false, DType::int4},
    {"  with W8A8 int8 (SmoothQuant)", true, true, true, false, DType::int8, DType::bf16,
     DType::int8},
    {"  with int4 weights and an fp8 KV cache", true, true, true, false, DType::int4, DType::fp8},
};

double sum_of(const std::vector<engine::KernelClassTime>& kernels,
              double engine::KernelClassTime::*field) {
  double total = 0;
  for (const auto& k : kernels) total += k.*field;
  return total;
}

// The tensor-core format of the step's prefill GEMMs: fp8 and W8A8 multiply in 8 bits,
// weight-only formats in bf16 after dequantization.
DType gemm_dtype(const AblationStep& step) {
  if (step.weights == DType::fp8) return DType::fp8;
  if (step.activations == DType::int8) return DType::int8;
  return DType::bf16;
}

}  // namespace

void run_ablation(const BenchArgs& a, OutputFormat format) {
  EngineOptions options = batch_engine_options(a);
  if (options.device != "cuda") throw InputError("--ablation needs --device cuda");
  const std::string device_name = engine::cuda_device_name();
  const std::string hardware = hardware_for_compare(a, device_name);
  // Profiled passes: the bytes and FLOPs each step's kernels move.
  const engine::BenchOptions bench = bench_options(a, /*profile_kernels=*/true);
  nlohmann::json steps = nlohmann::json::array();
  for (const AblationStep& step : kAblation) {
    options.gemv = step.gemv;
    options.fusion = step.fusion;
    options.cuda_graphs = step.cuda_graphs;
    options.naive_attention = step.naive_attention;
    options.weights_from_checkpoint = false;
    options.quant.weights = step.weights;
    options.quant.kv = step.kv;
    options.quant.activations = step.activations;
    const CommonArgs common = predict_args_for(a, options, hardware);
    const PredictRun predicted = run_prediction(common, a.batch, a.input, a.output);
    engine::BenchResult result;
    {
      auto backend = engine::open_backend(a.model, options);
      result = engine::run_engine_bench(*backend, bench);
    }
    const auto& spec = predicted.hw.spec;
    const double read_bps = spec.profile ? spec.profile->hbm_read_bps : spec.memory_bandwidth_bps;
    const double peak = spec.peak_flops(gemm_dtype(step)).value_or(0.0);
    const double decode_bytes = sum_of(result.decode_kernels, &engine::KernelClassTime::bytes);
    const double prefill_flops = sum_of(result.prefill_kernels, &engine::KernelClassTime::flops);
    const double decode_bps = decode_bytes / result.decode_step.median_s;
    const double prefill_flops_per_s = prefill_flops / result.prefill.median_s;
    steps.push_back({{"step", step.name},
                     {"gemv", step.gemv},
                     {"fusion", step.fusion},
                     {"cuda_graphs", step.cuda_graphs},
                     {"attention", step.naive_attention ? "naive" : "flash"},
                     {"weights", dtype_name(step.weights)},
                     {"kv", dtype_name(step.kv)},
                     {"activations", dtype_name(step.activations)},
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
                     {"prefill_gemm_dtype", dtype_name(gemm_dtype(step))},
                     {"prefill_of_peak", peak > 0 ? prefill_flops_per_s / peak : 0.0},
                     {"predicted_prefill_ms", predicted.prediction.prefill_s * 1e3},
                     {"predicted_decode_step_ms", predicted.prediction.tpot_s * 1e3},
                     {"prefill_kernels", kernel_classes_json(result.prefill_kernels)},
                     {"decode_kernels", kernel_classes_json(result.decode_kernels)}});
  }
  nlohmann::json json = {{"model", a.model},        {"device_name", device_name},
                         {"hardware", hardware},    {"batch", a.batch},
                         {"input_tokens", a.input}, {"output_tokens", a.output},
                         {"repeats", a.repeats},    {"steps", steps}};
  emit(json, ablation_text(json), "", format);
}

}  // namespace inferlab::cli
