#include "cli/engine_args.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cli/common_args.hpp"
#include "engine/tp/rendezvous.hpp"
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
  add_tp_process_switches(cmd, args.tp_processes);
}

void add_tp_process_switches(CLI::App* cmd, TpProcessArgs& args) {
  cmd->add_option("--tp-launch", args.launch,
                  "Where --tp's ranks run: threads (of this process) or processes (this process "
                  "is rank 0 and starts the others on this host)")
      ->capture_default_str();
  cmd->add_option("--tp-world", args.world,
                  "Ranks in a group of processes started by hand, on any hosts: this command is "
                  "rank 0, the others run `inferlab tp-worker` (RANK, MASTER_ADDR and MASTER_PORT "
                  "of the environment fill --tp-rank and --tp-master)");
  cmd->add_option("--tp-rank", args.rank, "This process's rank with --tp-world (0: this command)");
  cmd->add_option("--tp-master", args.master,
                  "host:port rank 0 listens on with --tp-world (its own address, or 0.0.0.0)");
  cmd->add_option("--tp-timeout", args.timeout_s,
                  "Seconds rank 0 waits for a group of processes to join")
      ->capture_default_str();
}

namespace {

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

}  // namespace

std::string tp_master_from_environment() {
  std::string host = environment("MASTER_ADDR");
  if (host.empty()) return "";
  if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";
  return host + ":" + environment("MASTER_PORT");
}

void apply_tp_process_switches(const TpProcessArgs& args, EngineOptions& options) {
  engine::TpProcessOptions& p = options.tp_processes;
  p = engine::TpProcessOptions{};
  if (!(args.timeout_s > 0 && args.timeout_s <= 86400)) {
    throw InputError("--tp-timeout must be in (0, 86400] seconds");
  }
  p.timeout_s = args.timeout_s;
  if (args.launch != "threads" && args.launch != "processes") {
    throw InputError("unknown --tp-launch '" + args.launch + "'; known: threads, processes");
  }
  constexpr int64_t kNotGiven = TpProcessArgs::kNotGiven;
  if (args.world == kNotGiven) {
    if (args.rank != kNotGiven || !args.master.empty()) {
      throw InputError(
          "--tp-rank and --tp-master go with --tp-world N (a group of processes started by hand)");
    }
    if (args.launch == "processes") {
      if (options.tp < 2) throw InputError("--tp-launch processes needs --tp 2 or more");
      p.enabled = p.launch = true;
    }
    return;
  }
  if (args.world < 2 || args.world > 64) {
    throw InputError(
        fmt::format("--tp-world {}: a group of processes has 2 to 64 ranks", args.world));
  }
  if (options.tp != 1 && options.tp != args.world) {
    throw InputError(fmt::format("--tp {} and --tp-world {} differ", options.tp, args.world));
  }
  if (args.launch == "processes") {
    throw InputError(
        "--tp-launch processes starts every rank on this host; with --tp-world the other ranks "
        "are started by hand (`inferlab tp-worker`)");
  }
  int64_t rank = args.rank == kNotGiven ? 0 : args.rank;
  if (const std::string text = environment("RANK"); args.rank == kNotGiven && !text.empty()) {
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), rank);
    if (error != std::errc() || end != text.data() + text.size()) {
      throw InputError("RANK='" + text + "' in the environment is not a rank");
    }
  }
  if (rank < 0 || rank >= args.world) {
    throw InputError(fmt::format("--tp-rank {}: a rank of --tp-world {} is in [0, {}]", rank,
                                 args.world, args.world - 1));
  }
  if (rank > 0) {
    throw InputError(fmt::format(
        "--tp-rank {}: this command is rank 0; rank {} runs `inferlab tp-worker --tp-rank {} "
        "--tp-world {} --tp-master HOST:PORT`",
        rank, rank, rank, args.world));
  }
  const std::string master = args.master.empty() ? tp_master_from_environment() : args.master;
  if (master.empty()) {
    throw InputError(
        "--tp-world needs --tp-master host:port (or MASTER_ADDR and MASTER_PORT in the "
        "environment): where rank 0 listens");
  }
  engine::tp::parse_endpoint(master, "--tp-master");  // refused here, before any model is read
  options.tp = args.world;
  p.enabled = true;
  p.master = master;
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
  apply_tp_process_switches(args.tp_processes, options);
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
