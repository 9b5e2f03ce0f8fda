// `inferlab perplexity`: token-level perplexity of a text (or of token ids) under a model, with
// the usual sliding window (engine/perplexity.hpp), on the engine's CPU reference or the GPU.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "cli/engine_args.hpp"
#include "engine/perplexity.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "report/emit.hpp"
#include "util/error.hpp"

namespace inferlab::cli {

namespace {

struct PerplexityArgs {
  std::string model, text_file, tokens_file, tokenizer, device = "auto";
  int64_t context = 0, stride = 0;
  uint64_t seed = 0;
  EngineSwitchArgs switches;
  CommonArgs common;
};

// The text's ids as transformers' tokenizer(text) gives them: BOS first where the tokenizer has
// one, then the text's tokens.
std::vector<int32_t> text_ids(const PerplexityArgs& a) {
  const std::string text = read_text_file(a.text_file, "--text");
  if (text.empty()) throw InputError("--text file '" + a.text_file + "' is empty");
  const auto tok = engine::Tokenizer::from_file(tokenizer_path(a.model, a.tokenizer));
  return tok.encode(text, /*add_bos=*/tok.bos_id().has_value());
}

void run_perplexity(const PerplexityArgs& a) {
  const OutputFormat format = parse_output_format(a.common.format);
  if (a.text_file.empty() == a.tokens_file.empty()) {
    throw InputError("give the text as --text FILE or its ids as --tokens FILE (one of them)");
  }
  if (a.context < 0 || a.stride < 0) throw InputError("--context and --stride must be positive");
  const int64_t model_context = engine::load_llama_config(a.model).model.max_position_embeddings;
  const int64_t context = a.context > 0 ? a.context : std::min<int64_t>(model_context, 2048);
  const int64_t stride = a.stride > 0 ? a.stride : std::max<int64_t>(1, context / 2);
  if (context < 2 || context > model_context) {
    throw InputError(fmt::format("--context {} must be in [2, the model's context of {}]", context,
                                 model_context));
  }
  if (stride > context) {
    throw InputError(
        fmt::format("--stride {} is longer than --context {}: tokens between the "
                    "windows would go unscored",
                    stride, context));
  }
  const std::vector<int32_t> ids =
      a.tokens_file.empty() ? text_ids(a) : read_token_ids_file(a.tokens_file);
  if (ids.size() < 2) {
    throw InputError(
        fmt::format("perplexity needs at least 2 tokens; the text gives {}", ids.size()));
  }
  EngineOptions options;
  options.device = resolve_device(a.device);
  options.seed = a.seed;
  options.kv_tokens = context;
  options.max_batch_tokens = context;  // a window is one prefill
  options.max_sequences = 1;
  options.cuda_graphs = false;  // prefills only: no decode step to capture
  apply_engine_switches(a.switches, options);
  auto backend = engine::open_backend(a.model, options);
  const int64_t vocab = backend->config().model.vocab_size;
  for (int32_t id : ids) {
    if (id >= vocab) {
      throw InputError(
          fmt::format("token id {} is outside the model's vocabulary of {}", id, vocab));
    }
  }
  const engine::PerplexityResult r = engine::perplexity(*backend, ids, context, stride);
  const nlohmann::json json = {{"model", a.model},       {"perplexity", r.perplexity},
                               {"nll_mean", r.nll_mean}, {"tokens", r.tokens},
                               {"windows", r.windows},   {"context", context},
                               {"stride", stride},       {"device", options.device}};
  const std::string text = fmt::format(
      "perplexity {:.4f} (mean NLL {:.5f} nats) over {} tokens, {} windows of {} "
      "tokens every {}\n",
      r.perplexity, r.nll_mean, r.tokens, r.windows, context, stride);
  emit(json, text, text, format);
}

}  // namespace

void register_perplexity(CLI::App& app) {
  auto args = std::make_shared<PerplexityArgs>();
  CLI::App* cmd = app.add_subcommand(
      "perplexity", "Token-level perplexity of a text under a model (sliding window)");
  cmd->add_option("--model", args->model, "Checkpoint folder, or a shipped model (random weights)")
      ->required();
  cmd->add_option("--text", args->text_file, "Text file, tokenized with the model's tokenizer");
  cmd->add_option("--tokens", args->tokens_file,
                  "JSON file of token ids instead: [ids...] or {\"tokens\": [ids...]}");
  cmd->add_option("--tokenizer", args->tokenizer, "tokenizer.json (default: the checkpoint's)");
  cmd->add_option("--context", args->context,
                  "Tokens per window (default the model's context, at most 2048)");
  cmd->add_option("--stride", args->stride, "Tokens between window starts (default context / 2)");
  cmd->add_option("--device", args->device, "auto, cuda or cpu")->capture_default_str();
  cmd->add_option("--seed", args->seed, "Random weights of a shipped model")->capture_default_str();
  add_engine_switches(cmd, args->switches);
  add_format_option(cmd, args->common);
  cmd->callback([args] { run_perplexity(*args); });
}

}  // namespace inferlab::cli
