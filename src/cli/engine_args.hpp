#pragma once
// The engine's switches as every engine command spells them, parsed into engine::EngineOptions;
// the engine itself is opened by engine::open_engine (engine/engine_open.hpp).
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/engine_open.hpp"

namespace CLI {
class App;
}

namespace inferlab::cli {

using engine::EngineBackends;
using engine::EngineOptions;
using engine::is_checkpoint_folder;
using engine::load_engine_model;
using engine::resolve_device;
using engine::tokenizer_path;

// Where the tensor-parallel ranks run (docs/TENSOR_PARALLEL.md): threads of this process (the
// default), processes this one starts on this host (--tp-launch processes), or processes started
// by hand on any hosts (--tp-world N; this command is rank 0, the others run
// `inferlab tp-worker`).
struct TpProcessArgs {
  static constexpr int64_t kNotGiven = INT64_MIN;
  std::string launch = "threads";  // --tp-launch threads|processes
  int64_t world = kNotGiven;       // --tp-world
  int64_t rank = kNotGiven;        // --tp-rank
  std::string master;              // --tp-master host:port
  double timeout_s = 60;           // --tp-timeout
};
void add_tp_process_switches(CLI::App* cmd, TpProcessArgs& args);
// Into options.tp_processes, with options.tp (--tp) already set; --tp-world N sets options.tp to N
// when --tp is left at 1. The environment (RANK, MASTER_ADDR, MASTER_PORT, as torchrun sets them)
// fills a missing --tp-rank or --tp-master only when --tp-world is given, so that a stray variable
// never turns a one-process run into a group. InputError for a rank outside [0, world), a rank
// other than 0 (those run `inferlab tp-worker`), a malformed --tp-master and impossible pairs.
void apply_tp_process_switches(const TpProcessArgs& args, EngineOptions& options);
// MASTER_ADDR:MASTER_PORT of the environment (an IPv6 address in brackets); "" without
// MASTER_ADDR.
std::string tp_master_from_environment();

// The engine's optimization switches as every engine command spells them (--cuda-graphs stays
// with each command).
struct EngineSwitchArgs {
  std::string gemv = "on", fusion = "on", attention = "flash", weights = "auto", kv = "bf16",
              activations = "bf16";
  int64_t group_size = 128;
  int64_t tp = 1;
  TpProcessArgs tp_processes;
};
void add_engine_switches(CLI::App* cmd, EngineSwitchArgs& args);
// Parses the switches into `options` (InputError for unknown names and impossible combinations).
void apply_engine_switches(const EngineSwitchArgs& args, EngineOptions& options);
// --weights (auto or empty: the checkpoint's), --kv and --activations (bf16, int8 for W8A8, or
// fp8 with fp8 weights) into options.quant: the one grammar of the engine's number formats, for
// the engine commands' switches and `serve --executor engine`'s predict-style flags alike.
void apply_number_formats(const std::string& weights, const std::string& kv,
                          const std::string& activations, EngineOptions& options);

// The whole of a text file given by `flag` (e.g. --prompt-file); InputError when it cannot be read.
std::string read_text_file(const std::string& path, const std::string& flag);
// A JSON file of token ids, [ids...] or {"tokens": [ids...]}, not empty (InputError otherwise).
std::vector<int32_t> read_token_ids_file(const std::string& path);

}  // namespace inferlab::cli
