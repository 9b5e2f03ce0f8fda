// `inferlab quantize`: a bf16 checkpoint (or a shipped model's random weights) written as a GPTQ
// checkpoint of int4 groups or int8 channels: rounded to nearest, or with --calibration solved by
// GPTQ against the inputs the model's layers see on that text (run on the CPU reference).
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "cli/engine_args.hpp"
#include "engine/checkpoint.hpp"
#include "engine/cpu/gptq_calibration.hpp"
#include "engine/engine_open.hpp"
#include "engine/llama_weights.hpp"
#include "engine/quant/formats.hpp"
#include "engine/quant/moe_quantization.hpp"
#include "engine/quant/quantize_checkpoint.hpp"
#include "engine/tensor_source.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "report/emit.hpp"
#include "report/table.hpp"
#include "util/data_dir.hpp"
#include "util/error.hpp"

namespace inferlab::cli {

namespace {

struct QuantizeArgs {
  CommonArgs common;
  std::string model, out, weights = "int4";
  int64_t group_size = 128;
  uint64_t seed = 0;
  // GPTQ: calibration text, how many of its tokens, in windows of how many, and the damping.
  std::string calibration, calibration_ids, tokenizer;
  int64_t calibration_tokens = 2048, calibration_window = 512;
  double damp = 0.01;
};

// GPTQ's Hessians from the first --calibration-tokens tokens of the calibration text (BOS first
// where the tokenizer has one), run through the bf16 model on the CPU reference.
std::shared_ptr<const engine::GptqHessians> calibrate(const QuantizeArgs& a,
                                                      const engine::LlamaConfig& config) {
  if (a.calibration_tokens < 2 || a.calibration_tokens > 1000000 || a.calibration_window < 2 ||
      !(a.damp > 0 && a.damp < 1)) {
    throw InputError(
        "--calibration-tokens must be in [2, 1000000], --calibration-window at least 2 and "
        "--damp in (0, 1)");
  }
  std::vector<int32_t> ids;
  if (!a.calibration_ids.empty()) {
    ids = read_token_ids_file(a.calibration_ids);
  } else {
    const std::string text = read_text_file(a.calibration, "--calibration");
    if (text.empty()) throw InputError("--calibration file '" + a.calibration + "' is empty");
    const auto tok = engine::Tokenizer::from_file(engine::tokenizer_path(a.model, a.tokenizer));
    ids = tok.encode(text, /*add_bos=*/tok.bos_id().has_value());
  }
  if (static_cast<int64_t>(ids.size()) > a.calibration_tokens) {
    ids.resize(static_cast<size_t>(a.calibration_tokens));
  }
  for (int32_t id : ids) {
    if (id < 0 || id >= config.model.vocab_size) {
      throw InputError(fmt::format(
          "calibration token id {} is outside the model's vocabulary of {} (a tokenizer of "
          "another model?)",
          id, config.model.vocab_size));
    }
  }
  return std::make_shared<engine::GptqHessians>(
      engine::gptq_hessians(engine::load_engine_model(a.model, a.seed), ids, a.calibration_window));
}

// The tokenizer and generation files a checkpoint folder has beside its weights.
std::vector<std::filesystem::path> files_beside(const std::string& model) {
  std::vector<std::filesystem::path> files;
  const std::filesystem::path folder =
      is_checkpoint_folder(model) ? std::filesystem::path(model) : fetched_tokenizer_dir("llama3");
  for (const char* name : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"}) {
    std::error_code error;
    if (std::filesystem::is_regular_file(folder / name, error)) files.push_back(folder / name);
  }
  return files;
}

void run_quantize(const QuantizeArgs& a) {
  const OutputFormat format = parse_output_format(a.common.format);
  engine::QuantizeCheckpointOptions options;
  options.out_dir = a.out;
  options.weights = engine::parse_weight_format(a.weights);
  options.group_size = a.group_size;
  options.extra_files = files_beside(a.model);
  if (a.group_size < 1 || a.group_size > 65536) {
    throw InputError("--group-size must be in [32, 65536] and a multiple of 32");
  }
  const engine::LlamaConfig config = engine::load_llama_config(a.model);
  if (config.gptq) {
    throw InputError("'" + a.model + "' is already GPTQ-quantized; quantize a bf16 checkpoint");
  }
  engine::QuantConfig quant;  // (before the calibration pass; quantize_checkpoint checks it too)
  quant.weights = options.weights;
  engine::check_moe_quantization(config, quant);
  if (!a.calibration.empty() && !a.calibration_ids.empty()) {
    throw InputError(
        "give the calibration as --calibration TEXT or --calibration-ids FILE, not both");
  }
  if (!a.calibration.empty() || !a.calibration_ids.empty()) {
    options.hessians = calibrate(a, config);
  }
  options.damp = a.damp;
  engine::QuantizeCheckpointResult result;
  if (is_checkpoint_folder(a.model)) {
    // equivalent() throws for a path that does not exist: a fresh --out is never the checkpoint.
    if (std::filesystem::exists(a.out) && std::filesystem::equivalent(a.model, a.out)) {
      throw InputError("--out must not be the checkpoint's own folder");
    }
    const auto checkpoint = engine::Checkpoint::open(a.model);
    engine::check_llama_checkpoint(checkpoint, config);
    result =
        engine::quantize_checkpoint(config, engine::checkpoint_tensor_source(checkpoint), options);
  } else {
    result =
        engine::quantize_checkpoint(config, engine::random_tensor_source(config, a.seed), options);
  }
  nlohmann::json files = nlohmann::json::array();
  for (const auto& file : result.files) files.push_back(file.string());
  const nlohmann::json json = {
      {"out_dir", a.out},
      {"weights", a.weights},
      {"method", options.hessians ? "gptq" : "round_to_nearest"},
      {"calibration_tokens", options.hessians ? options.hessians->tokens : 0},
      {"group_size", options.weights == DType::int4 ? a.group_size : -1},
      {"quantized_modules", result.quantized_modules},
      {"tensors", result.tensors},
      {"weight_bytes", result.weight_bytes},
      {"files", files}};
  Table table({"checkpoint", "value"});
  table.add_row({"folder", a.out});
  table.add_row(
      {"format", fmt::format("GPTQ {}{}", a.weights,
                             options.weights == DType::int4 ? fmt::format(" g{}", a.group_size)
                                                            : std::string(" per channel"))});
  table.add_row({"method", options.hessians ? fmt::format("GPTQ on {} calibration tokens",
                                                          options.hessians->tokens)
                                            : std::string("round to nearest")});
  table.add_row({"quantized modules", std::to_string(result.quantized_modules)});
  table.add_row(
      {"weights", fmt::format("{:.3f} GB", static_cast<double>(result.weight_bytes) / 1e9)});
  emit(json, table, format);
}

}  // namespace

void register_quantize(CLI::App& app) {
  auto args = std::make_shared<QuantizeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "quantize",
      "Write a GPTQ checkpoint of int4 or int8 weights: rounded to nearest, or with --calibration "
      "solved by GPTQ");
  cmd->add_option("--model", args->model, "Checkpoint folder, or a shipped model (random weights)")
      ->required();
  cmd->add_option("--out", args->out, "Checkpoint folder to write")->required();
  cmd->add_option("--weights", args->weights, "int4 (groups) or int8 (per channel)")
      ->capture_default_str();
  cmd->add_option("--group-size", args->group_size, "int4: inputs per fp16 scale")
      ->capture_default_str();
  cmd->add_option("--seed", args->seed, "Random weights of a shipped model")->capture_default_str();
  cmd->add_option("--calibration", args->calibration,
                  "Text file: GPTQ solves each projection against the inputs its layer sees on "
                  "this text (CPU reference); without it, round to nearest");
  cmd->add_option("--calibration-ids", args->calibration_ids,
                  "Instead of --calibration: its token ids, JSON [ids...] or {\"tokens\": [...]}");
  cmd->add_option("--calibration-tokens", args->calibration_tokens,
                  "Tokens of the calibration text used")
      ->capture_default_str();
  cmd->add_option("--calibration-window", args->calibration_window,
                  "Tokens per calibration sequence")
      ->capture_default_str();
  cmd->add_option("--damp", args->damp, "GPTQ's damping: a fraction of the Hessian's mean diagonal")
      ->capture_default_str();
  cmd->add_option("--tokenizer", args->tokenizer, "tokenizer.json (default: the checkpoint's)");
  add_format_option(cmd, args->common);
  cmd->callback([args] { run_quantize(*args); });
}

}  // namespace inferlab::cli
