// `inferlab logits`: the engine's logits for a token sequence, teacher-forced: a prefill of the
// first --prefill tokens (every position's logits), then one decode step per remaining token.
// Written as a float32 .npy [positions, vocab] for comparison with another framework.
#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/engine_args.hpp"
#include "engine/backend.hpp"
#include "engine/teacher_forced.hpp"
#include "util/error.hpp"

namespace inferlab::cli {

namespace {

struct LogitsArgs {
  std::string model, tokens_file, out, device = "auto";
  int64_t prefill = 0;
  uint64_t seed = 0;
  EngineSwitchArgs switches;
};

// NumPy's .npy v1.0: magic, header length, a Python dict literal padded to 64 bytes, data.
void write_npy(const std::string& path, const std::vector<float>& values, int64_t rows,
               int64_t cols) {
  std::string header =
      fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {}), }}", rows, cols);
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) throw InputError("cannot write --out file '" + path + "'");
  out.write("\x93NUMPY\x01\x00", 8);
  const auto length = static_cast<uint16_t>(header.size());
  out.put(static_cast<char>(length & 0xff));
  out.put(static_cast<char>(length >> 8));
  out << header;
  out.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(values.size() * sizeof(float)));
  if (!out) throw std::runtime_error("writing '" + path + "' failed");
}

void run_logits(const LogitsArgs& a) {
  const std::vector<int32_t> ids = read_token_ids_file(a.tokens_file);
  const auto count = static_cast<int64_t>(ids.size());
  const int64_t prefill = a.prefill > 0 ? a.prefill : count;
  if (prefill > count) {
    throw InputError(fmt::format("--prefill {} is more than the {} tokens given", prefill, count));
  }
  EngineOptions options;
  options.device = resolve_device(a.device);
  options.seed = a.seed;
  options.kv_tokens = count;
  options.max_batch_tokens = std::max<int64_t>(4096, prefill);
  options.max_sequences = 1;
  apply_engine_switches(a.switches, options);
  auto backend = engine::open_backend(a.model, options);
  const int64_t context = backend->config().model.max_position_embeddings;
  if (context > 0 && count > context) {
    throw InputError(
        fmt::format("{} tokens are longer than the model's context of {}", count, context));
  }
  engine::BlockAllocator allocator(backend->kv_layout().num_blocks);
  engine::BlockTable block_table;
  allocator.grow(block_table, count, backend->kv_layout().block_size);
  const std::vector<float> logits =
      engine::teacher_forced_logits(*backend, ids, prefill, std::move(block_table));
  const int64_t vocab = backend->config().model.vocab_size;
  write_npy(a.out, logits, count, vocab);
}

}  // namespace

void register_logits(CLI::App& app) {
  auto args = std::make_shared<LogitsArgs>();
  CLI::App* cmd = app.add_subcommand(
      "logits", "Teacher-forced logits of a token sequence, to a float32 .npy [tokens, vocab]");
  cmd->add_option("--model", args->model, "Checkpoint folder, or a shipped model (random weights)")
      ->required();
  cmd->add_option("--tokens", args->tokens_file, "JSON file: [ids...] or {\"tokens\": [ids...]}")
      ->required();
  cmd->add_option("--prefill", args->prefill,
                  "Tokens run as one prefill (default all); the rest one decode step each");
  cmd->add_option("--out", args->out, "Output .npy file")->required();
  cmd->add_option("--device", args->device, "auto, cuda or cpu")->capture_default_str();
  cmd->add_option("--seed", args->seed, "Random weights of a shipped model")->capture_default_str();
  add_engine_switches(cmd, args->switches);
  cmd->callback([args] { run_logits(*args); });
}

}  // namespace inferlab::cli
