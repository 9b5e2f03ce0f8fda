// `inferlab generate`: text from a prompt on the engine, streamed to stdout as it is decoded;
// TTFT, TPOT and tokens/s on stderr (--format json: one object instead).
#include <fmt/format.h>

#include <functional>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "cli/engine_args.hpp"
#include "engine/generate.hpp"
#include "engine/speculative.hpp"
#include "engine/tokenizer/chat.hpp"
#include "engine/tokenizer/stream_decoder.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "engine/tokenizer/utf8.hpp"
#include "report/emit.hpp"
#include "report/engine_report.hpp"
#include "report/speculative_report.hpp"
#include "util/error.hpp"

namespace inferlab::cli {

namespace {
struct GenerateArgs {
  CommonArgs common;
  std::string model, tokenizer, prompt, prompt_file, device = "auto";
  bool chat = false;
  int64_t max_tokens = 64, top_k = 0;
  int64_t max_model_len = 0;              // 0: the model's context
  int64_t max_num_batched_tokens = 8192;  // prompt tokens per prefill pass
  double temperature = 0.0, top_p = 1.0;
  double gpu_memory_utilization = 0.90;
  std::string cuda_graphs = "on";
  std::string speculative;  // ngram,k=K[,n=N] or draft=MODEL,k=K
  int64_t warmup_runs = 0;  // untimed generations of the same request first
  uint64_t seed = 0;
  EngineSwitchArgs switches;
};

void check_args(const GenerateArgs& a) {
  if (a.max_tokens < 1 || a.max_tokens > 1'000'000) {
    throw InputError("--max-tokens must be in [1, 1000000], got " + std::to_string(a.max_tokens));
  }
  if (!(a.temperature >= 0.0 && a.temperature <= 100.0)) {
    throw InputError("--temperature must be in [0, 100]");
  }
  if (!(a.top_p > 0.0 && a.top_p <= 1.0)) throw InputError("--top-p must be in (0, 1]");
  if (a.top_k < 0) throw InputError("--top-k must be ≥ 0");
  if (!(a.gpu_memory_utilization > 0.0 && a.gpu_memory_utilization <= 1.0)) {
    throw InputError("--gpu-memory-utilization must be in (0, 1]");
  }
  if (a.max_num_batched_tokens < 1 || a.max_num_batched_tokens > (int64_t{1} << 20)) {
    throw InputError("--max-num-batched-tokens must be in [1, 2^20]");
  }
  if (a.warmup_runs < 0 || a.warmup_runs > 100) {
    throw InputError("--warmup-runs must be in [0, 100], got " + std::to_string(a.warmup_runs));
  }
  if (a.prompt.empty() == a.prompt_file.empty()) {
    throw InputError("give the prompt as --prompt TEXT or --prompt-file FILE (one of them)");
  }
}

// --prompt, or the text of --prompt-file.
std::string prompt_text(const GenerateArgs& a) {
  return a.prompt_file.empty() ? a.prompt : read_text_file(a.prompt_file, "--prompt-file");
}

std::vector<int32_t> prompt_ids(const GenerateArgs& a, const engine::Tokenizer& tok) {
  const std::string text = prompt_text(a);
  if (!a.chat) return tok.encode(text, /*add_bos=*/tok.bos_id().has_value());
  std::vector<engine::ChatMessage> messages{{"user", text}};
  return engine::encode_llama3_chat(tok, messages);
}

void run_generate(const GenerateArgs& a) {
  OutputFormat format = parse_output_format(a.common.format);
  check_args(a);
  const int64_t max_model_len = resolve_max_model_len(
      a.max_model_len, engine::load_llama_config(a.model).model.max_position_embeddings);
  auto tok = engine::Tokenizer::from_file(tokenizer_path(a.model, a.tokenizer));
  std::vector<int32_t> prompt = prompt_ids(a, tok);
  // The length check before any weight is read (generate() checks the model's context again,
  // for library users).
  if (max_model_len > 0 && static_cast<int64_t>(prompt.size()) + a.max_tokens > max_model_len) {
    throw InputError(fmt::format(
        "the prompt ({} tokens) plus {} new tokens is longer than the maximum model length of {} "
        "tokens; shorten the prompt or --max-tokens",
        prompt.size(), a.max_tokens, max_model_len));
  }
  EngineOptions engine_options;
  engine_options.device = resolve_device(a.device);
  engine_options.seed = a.seed;
  engine_options.kv_tokens = static_cast<int64_t>(prompt.size()) + a.max_tokens;
  // A long prompt prefills in passes of --max-num-batched-tokens: the buffers hold one pass.
  engine_options.max_batch_tokens = std::max<int64_t>(
      engine_options.max_batch_tokens,
      std::min<int64_t>(a.max_num_batched_tokens, static_cast<int64_t>(prompt.size())));
  engine_options.max_sequences = 1;
  engine_options.gpu_memory_utilization = a.gpu_memory_utilization;
  engine_options.cuda_graphs = parse_on_off("--cuda-graphs", a.cuda_graphs);
  apply_engine_switches(a.switches, engine_options);
  std::string draft_model;
  engine::SpeculativeOptions speculative;
  if (!a.speculative.empty()) {
    speculative = engine::parse_speculative(a.speculative, draft_model);
    if (!draft_model.empty()) engine::load_llama_config(draft_model);  // fails before any load
    // Verification writes up to k positions past the accepted ones; on a GPU the target's pool
    // is sized to the request so that a draft model's backend finds memory too.
    engine_options.kv_tokens += speculative.k;
    engine_options.kv_pool_tokens = engine_options.kv_tokens;
  }
  auto backend = engine::open_backend(a.model, engine_options);
  std::unique_ptr<engine::Backend> draft;
  if (!draft_model.empty()) draft = engine::open_backend(draft_model, engine_options);
  std::vector<int32_t> stops =
      engine::stop_token_ids(tok, is_checkpoint_folder(a.model) ? a.model : "");
  engine::GenerateOptions options{a.max_tokens,
                                  {a.temperature, a.top_k, a.top_p},
                                  a.seed,
                                  std::vector<int64_t>(stops.begin(), stops.end()),
                                  a.max_num_batched_tokens};
  engine::StreamDecoder stream(tok, /*skip_special_tokens=*/true);
  bool streaming = format == OutputFormat::table;
  auto on_token = [&](int32_t id) {
    std::string piece = stream.push(id);
    if (streaming) std::cout << piece << std::flush;
  };
  engine::SpeculativeStats stats;
  auto run = [&](const std::function<void(int32_t)>& sink) {
    return a.speculative.empty() ? engine::generate(*backend, prompt, options, sink)
                                 : engine::generate_speculative(*backend, draft.get(), prompt,
                                                                options, speculative, sink, &stats);
  };
  // Warm-up runs make what a long-running engine has made once (CUDA graphs of each shape, GEMM
  // plans), so that the timed run measures the steady state.
  for (int64_t i = 0; i < a.warmup_runs; ++i) run({});
  const auto result = run(on_token);
  std::string tail = stream.finish();
  int64_t prompt_tokens = static_cast<int64_t>(prompt.size());
  if (streaming) {
    std::cout << tail << '\n';
    std::cerr << generate_summary(prompt_tokens, result, engine_options.device);
    if (!a.speculative.empty()) std::cerr << speculative_stats_summary(stats);
    return;
  }
  std::string text = engine::utf8_lossy(tok.decode(result.tokens, /*skip_special_tokens=*/true));
  nlohmann::json json = generate_json(text, prompt_tokens, result, engine_options.device);
  if (!a.speculative.empty()) json["speculative"] = speculative_stats_json(speculative, stats);
  emit(json, "", json.dump() + "\n", format);
}
}  // namespace

void register_generate(CLI::App& app) {
  auto args = std::make_shared<GenerateArgs>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate text on the engine");
  cmd->add_option("--model", args->model, "Checkpoint folder, or a shipped model (random weights)")
      ->required();
  cmd->add_option("--tokenizer", args->tokenizer, "tokenizer.json (default: the checkpoint's)");
  cmd->add_option("--prompt", args->prompt, "Prompt text");
  cmd->add_option("--prompt-file", args->prompt_file, "Read the prompt text from this file");
  cmd->add_flag("--chat", args->chat, "Wrap the prompt in Llama 3's chat format");
  cmd->add_option("--max-tokens", args->max_tokens, "Tokens to generate")->capture_default_str();
  cmd->add_option("--max-model-len", args->max_model_len,
                  "Longest prompt + output accepted (default: the model's context)");
  cmd->add_option("--max-num-batched-tokens", args->max_num_batched_tokens,
                  "Prompt tokens per prefill pass: a longer prompt prefills in chunks")
      ->capture_default_str();
  cmd->add_option("--temperature", args->temperature, "0: greedy")->capture_default_str();
  cmd->add_option("--top-p", args->top_p, "Nucleus sampling mass")->capture_default_str();
  cmd->add_option("--top-k", args->top_k, "0: no limit")->capture_default_str();
  cmd->add_option("--seed", args->seed, "Sampling seed (and random weights for a shipped model)")
      ->capture_default_str();
  cmd->add_option("--device", args->device,
                  "auto (cuda where a GPU is present), cuda, or cpu (the fp32 reference)")
      ->capture_default_str();
  cmd->add_option("--gpu-memory-utilization", args->gpu_memory_utilization,
                  "Share of the GPU's memory the engine may take (weights, KV pool, buffers)")
      ->capture_default_str();
  cmd->add_option("--cuda-graphs", args->cuda_graphs, "on: decode steps replay a CUDA graph")
      ->capture_default_str();
  add_engine_switches(cmd, args->switches);
  cmd->add_option("--warmup-runs", args->warmup_runs,
                  "Untimed runs of the same request first (graphs and plans made): the timed run "
                  "measures the steady state")
      ->capture_default_str();
  cmd->add_option("--speculative", args->speculative,
                  "Speculative decoding: ngram,k=K[,n=N] (prompt lookup) or draft=MODEL,k=K (a "
                  "draft model sharing the tokenizer); greedy output is unchanged");
  add_format_option(cmd, args->common);
  cmd->callback([args] { run_generate(*args); });
}

}  // namespace inferlab::cli
