#pragma once
// The engine's switches as every engine command spells them, parsed into engine::EngineOptions;
// the engine itself is opened by engine::open_engine (engine/engine_open.hpp).
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

// The engine's optimization switches as every engine command spells them (--cuda-graphs stays
// with each command).
struct EngineSwitchArgs {
  std::string gemv = "on", fusion = "on", attention = "flash", weights = "auto", kv = "bf16",
              activations = "bf16";
  int64_t group_size = 128;
  int64_t tp = 1;
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
