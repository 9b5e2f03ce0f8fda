#include "cli/bench_args.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "engine/engine_profile.hpp"
#include "util/error.hpp"

namespace inferlab::cli {

void check_bench_sizes(const BenchArgs& a) {
  if (a.batch < 1 || a.batch > 4096) throw InputError("--batch must be in [1, 4096]");
  if (a.input < 1 || a.input > 1'000'000) throw InputError("--input must be in [1, 1000000]");
  if (a.output < 1 || a.output > 1'000'000) throw InputError("--output must be in [1, 1000000]");
  if (a.repeats < 1 || a.repeats > 10'000) throw InputError("--repeats must be in [1, 10000]");
  if (a.warmup < 0 || a.warmup > 1'000) throw InputError("--warmup must be in [0, 1000]");
  if (!(a.gpu_memory_utilization > 0.0 && a.gpu_memory_utilization <= 1.0)) {
    throw InputError("--gpu-memory-utilization must be in (0, 1]");
  }
  engine::profile_grid_named(a.profile_grid);  // refuses an unknown name
  if (a.batch * a.input > 262'144) {
    throw InputError(fmt::format("--batch × --input is {} tokens in one prefill; at most 262144",
                                 a.batch * a.input));
  }
}

void check_bench_context(const BenchArgs& a) {
  const int64_t max_model_len = resolve_max_model_len(
      a.max_model_len, engine::load_llama_config(a.model).model.max_position_embeddings);
  if (max_model_len > 0 && a.input + a.output > max_model_len) {
    throw InputError(fmt::format(
        "--input {} plus --output {} is {} tokens, past the maximum model length of {} tokens",
        a.input, a.output, a.input + a.output, max_model_len));
  }
}

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

EngineOptions batch_engine_options(const BenchArgs& a) {
  EngineOptions options;
  options.device = resolve_device(a.device);
  options.seed = a.seed;
  // Each sequence takes whole blocks: --batch 4 of 20 tokens needs 4 x 2 blocks of 16, not 80
  // tokens' 5 (the CPU's cache holds exactly kv_tokens).
  const int64_t blocks_per_sequence =
      (a.input + a.output + options.block_size - 1) / options.block_size;
  options.kv_tokens = a.batch * blocks_per_sequence * options.block_size;
  options.max_batch_tokens = std::max<int64_t>(4096, a.batch * a.input);
  options.max_sequences = a.batch;
  options.gpu_memory_utilization = a.gpu_memory_utilization;
  options.cuda_graphs = parse_on_off("--cuda-graphs", a.cuda_graphs);
  apply_engine_switches(a.switches, options);
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

CommonArgs predict_args_for(const BenchArgs& a, const EngineOptions& options,
                            const std::string& hardware) {
  CommonArgs common;
  common.model = predict_model_name(a.model);
  common.hardware = hardware;
  common.framework = "inferlab";
  const EngineSwitches s = engine_switches_of(options);
  common.gemv = s.gemv ? "on" : "off";
  common.fusion = s.fusion ? "on" : "off";
  common.rope_in_qkv = s.rope_in_qkv;
  common.early_cache_reads = s.early_cache_reads;
  common.cuda_graphs = s.cuda_graphs ? "on" : "off";
  common.flash_attention = s.flash_attention ? "on" : "off";
  common.weights = std::string(dtype_name(s.weights));
  common.kv = std::string(dtype_name(s.kv));
  common.activations = std::string(dtype_name(s.activations));
  common.tp = s.tp;  // the prediction of the split the engine runs
  return common;
}

EngineSwitches engine_switches_of(const EngineOptions& options) {
  EngineSwitches s;
  s.gemv = options.gemv;
  s.fusion = options.fusion;
  s.cuda_graphs = options.cuda_graphs;
  s.flash_attention = !options.naive_attention;
  s.weights = options.quant.weights;
  s.kv = options.quant.kv;
  s.activations = options.quant.activations;  // fp8 weights' fp8 inputs are implied
  s.tp = static_cast<int>(options.tp);
  s.rope_in_qkv = options.tuning.rope_in_qkv;
  // The early reads happen where the streamed kernel runs and is launched programmatically
  // (engine/cuda/attention.cu); an 8-bit cache the prediction tells apart by the "kv" switch.
  const engine::AttentionTuning& attention = options.tuning.attention;
  s.early_cache_reads = attention.cache_before_wait && attention.programmatic_launch &&
                        attention.decode_kernel != engine::DecodeKernelChoice::chunked &&
                        options.block_size % 16 == 0;
  return s;
}

}  // namespace inferlab::cli
