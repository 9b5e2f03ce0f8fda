#include "cli/engine_args.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <sstream>

#include "cli/common_args.hpp"
#include "util/error.hpp"
#include "util/json_file.hpp"

namespace inferlab::cli {

void add_engine_switches(CLI::App* cmd, EngineSwitchArgs& args) {
  cmd->add_option("--gemv", args.gemv,
                  "on: projections of few rows (decode) on the engine's GEMV kernels, not cuBLASLt")
      ->capture_default_str();
  cmd->add_option("--fusion", args.fusion,
                  "on: in decode, the RMSNorm, SiLU×mul and residual adds run inside the GEMV "
                  "kernels")
      ->capture_default_str();
  cmd->add_option("--attention", args.attention,
                  "flash (split-K decode, tiled prefill) or naive (materialized scores)")
      ->capture_default_str();
  cmd->add_option("--weights", args.weights,
                  "auto (the checkpoint's: GPTQ int4/int8, else bf16), bf16, fp8, int8 or int4 "
                  "(quantized round-to-nearest while loading)")
      ->capture_default_str();
  cmd->add_option("--kv", args.kv, "KV cache: bf16, fp8 or int8 (a scale per token and head)")
      ->capture_default_str();
  cmd->add_option("--activations", args.activations,
                  "bf16, or int8 (W8A8 with --weights int8: SmoothQuant, int8 tensor cores)")
      ->capture_default_str();
  cmd->add_option("--group-size", args.group_size, "int4 weights: inputs per scale")
      ->capture_default_str();
  cmd->add_option("--tp", args.tp,
                  "Tensor-parallel ranks (Megatron-style shards; --device cpu runs each rank in a "
                  "thread of the fp32 reference)")
      ->capture_default_str();
}

void apply_engine_switches(const EngineSwitchArgs& args, EngineOptions& options) {
  options.gemv = parse_on_off("--gemv", args.gemv);
  options.fusion = parse_on_off("--fusion", args.fusion);
  if (args.attention != "flash" && args.attention != "naive") {
    throw InputError("unknown --attention '" + args.attention + "'; known: flash, naive");
  }
  options.naive_attention = args.attention == "naive";
  apply_number_formats(args.weights, args.kv, args.activations, options);
  if (args.group_size < 32 || args.group_size > 65536 || args.group_size % 32 != 0) {
    throw InputError("--group-size must be a multiple of 32 in [32, 65536]");
  }
  options.quant.group_size = args.group_size;
  if (args.tp < 1 || args.tp > 64) {
    throw InputError(
        fmt::format("--tp {}: the tensor-parallel degree must be in [1, 64]", args.tp));
  }
  options.tp = args.tp;
}

void apply_number_formats(const std::string& weights, const std::string& kv,
                          const std::string& activations, EngineOptions& options) {
  options.weights_from_checkpoint = weights.empty() || weights == "auto";
  options.quant.weights =
      options.weights_from_checkpoint ? DType::bf16 : engine::parse_weight_format(weights);
  options.quant.kv = kv.empty() ? DType::bf16 : engine::parse_kv_format(kv);
  // fp8 inputs are what fp8 weights run with anyway (their GEMMs quantize x per token): the
  // flag names them, and means nothing with any other weights. (W8A8's rule, int8 activations
  // with int8 weights, is checked once, where the checkpoint's own format is known:
  // engine::check_quant_config.)
  if (activations == "fp8") {
    if (options.quant.weights != DType::fp8) {
      throw InputError("--activations fp8 runs with --weights fp8 (whose GEMMs take fp8 inputs)");
    }
    options.quant.activations = DType::bf16;
    return;
  }
  options.quant.activations =
      activations.empty() ? DType::bf16 : engine::parse_activation_format(activations);
}

std::string read_text_file(const std::string& path, const std::string& flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read " + flag + " '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<int32_t> read_token_ids_file(const std::string& path) {
  const nlohmann::json json = read_json_file(path, "tokens");
  const nlohmann::json& list = json.is_object() && json.contains("tokens") ? json["tokens"] : json;
  if (!list.is_array() || list.empty()) {
    throw InputError("tokens file '" + path +
                     "' must hold a non-empty array of token ids (or "
                     "{\"tokens\": [...]})");
  }
  std::vector<int32_t> ids;
  for (const auto& id : list) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
      throw InputError("tokens file '" + path + "': every entry must be a token id");
    }
    ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  return ids;
}

}  // namespace inferlab::cli
