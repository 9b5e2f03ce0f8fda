// `inferlab server`: the engine behind an OpenAI-compatible HTTP server until SIGTERM.
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "cli/engine_args.hpp"
#include "cli/serve_args.hpp"
#include "cli/server_signals.hpp"
#include "engine/speculative.hpp"
#include "engine/tokenizer/chat.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "server/api_keys.hpp"
#include "server/engine_loop.hpp"
#include "server/openai_server.hpp"
#include "util/error.hpp"

namespace inferlab::cli {

namespace {

struct ServerArgs {
  std::string model, tokenizer, host = "127.0.0.1", device = "auto", served_model_name;
  std::string policy = "chunked", speculative, cuda_graphs = "on", preemption = "recompute";
  std::string gemm_warmup = "on";
  int port = 8000;
  uint64_t seed = 0;
  int64_t kv_tokens = 0, max_num_seqs = 256, max_num_batched_tokens = 8192, max_model_len = 0;
  int64_t max_queue = 1024, block_size = 16;
  int http_threads = 512;
  bool prefix_caching = false;
  double gpu_memory_utilization = 0.90;
  EngineSwitchArgs switches;
  std::vector<std::string> api_keys;
  std::string api_key_file, ssl_certfile, ssl_keyfile;
  bool protect_metrics = false;
};

bool loopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.starts_with("127.");
}

// The keys of --api-key (or INFERLAB_API_KEY) and --api-key-file, and the rules around them.
server::ApiKeys api_keys_of(const ServerArgs& a) {
  std::vector<std::string> keys = a.api_keys;
  if (!a.api_key_file.empty()) {
    const auto from_file = server::read_api_key_file(a.api_key_file);
    keys.insert(keys.end(), from_file.begin(), from_file.end());
  }
  server::ApiKeys accepted(keys);
  if (a.protect_metrics && accepted.empty()) {
    throw InputError("--protect-metrics needs a key: give --api-key or --api-key-file");
  }
  if (accepted.empty() && !loopback(a.host)) {
    std::cerr << "inferlab: warning: listening on " << a.host
              << " without an API key: anyone who reaches it can use the model (give --api-key "
                 "or --api-key-file)\n";
  }
  return accepted;
}

void run_server(const ServerArgs& a) {
  // SIGTERM and SIGINT are blocked since main (prepare_server_signals); from here they stop the
  // server, during the start-up too.
  ServerStopper stopper;
  if (a.port < 0 || a.port > 65535) throw InputError("--port must be 0 to 65535");
  if (a.max_num_seqs < 1 || a.max_num_batched_tokens < 1 || a.max_queue < 0 || a.kv_tokens < 0 ||
      a.max_model_len < 0 || a.block_size < 1 || a.http_threads < 1 || a.http_threads > 65536) {
    throw InputError(
        "--max-num-seqs, --max-num-batched-tokens, --block-size and --http-threads must be "
        "positive; --max-queue, --kv-tokens and --max-model-len not negative");
  }
  // Keys and certificates are checked before anything loads (a minute for a large model).
  server::ApiKeys keys = api_keys_of(a);
  const server::TlsFiles tls{a.ssl_certfile, a.ssl_keyfile};
  server::check_tls_files(tls);
  SchedulerConfig config;
  config.policy = parse_schedule_policy(a.policy);
  if (config.policy != SchedulePolicy::vllm && config.policy != SchedulePolicy::chunked) {
    throw InputError("the server schedules with --policy chunked or vllm (paged KV cache)");
  }
  config.max_num_seqs = a.max_num_seqs;
  config.max_num_batched_tokens = a.max_num_batched_tokens;
  config.block_size = a.block_size;
  config.prefix_caching = a.prefix_caching;
  config.preemption = parse_preemption(a.preemption);
  std::string draft_model;  // empty: n-gram lookup (ngram,k=K or, as serve spells it, draft=ngram)
  if (!a.speculative.empty()) {
    const auto spec = engine::parse_speculative(a.speculative, draft_model);
    if (draft_model == "ngram") draft_model.clear();
    config.speculative.k = static_cast<int>(spec.k);
  }
  if (!draft_model.empty()) {  // refused before the tokenizer and any weight load
    engine::check_draft_vocabulary(engine::load_llama_config(a.model),
                                   engine::load_llama_config(draft_model));
  }
  const engine::Tokenizer tokenizer =
      engine::Tokenizer::from_file(tokenizer_path(a.model, a.tokenizer));
  const std::vector<int32_t> eos =
      engine::stop_token_ids(tokenizer, is_checkpoint_folder(a.model) ? a.model : "");
  const engine::LlamaConfig llama = engine::load_llama_config(a.model);
  int64_t max_model_len =
      resolve_max_model_len(a.max_model_len, llama.model.max_position_embeddings);
  EngineOptions options;
  options.device = resolve_device(a.device);
  options.seed = a.seed;
  options.block_size = a.block_size;
  options.kv_tokens = a.kv_tokens;
  options.kv_pool_tokens = a.kv_tokens;
  if (options.device == "cpu" && a.kv_tokens == 0) options.kv_tokens = 8192;
  // Chunked prefill bounds an iteration by its token budget; vllm runs whole prompts.
  options.max_batch_tokens = max_iteration_tokens(config, max_model_len);
  options.max_sequences = a.max_num_seqs;
  options.cuda_graphs = parse_on_off("--cuda-graphs", a.cuda_graphs);
  if (parse_on_off("--gemm-warmup", a.gemm_warmup)) {
    options.warm_gemm_rows = a.max_num_batched_tokens;
  }
  options.gpu_memory_utilization = a.gpu_memory_utilization;
  apply_engine_switches(a.switches, options);

  server::ServerOptions http_options;
  http_options.host = a.host;
  http_options.port = a.port;
  http_options.served_model_name = !a.served_model_name.empty()
                                       ? a.served_model_name
                                       : std::filesystem::path(a.model).filename().string();
  if (http_options.served_model_name.empty()) http_options.served_model_name = a.model;
  http_options.max_model_len = max_model_len;
  http_options.vocab_size = llama.model.vocab_size;
  http_options.http_threads = a.http_threads;
  http_options.eos_ids = eos;
  http_options.llama3_chat = tokenizer.added_token_id("<|start_header_id|>").has_value();
  http_options.api_keys = std::move(keys);
  http_options.protect_metrics = a.protect_metrics;
  http_options.tls = tls;

  const auto loading = std::chrono::steady_clock::now();
  const EngineBackends backends = engine::open_engine(a.model, draft_model, options);
  const double ready_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - loading).count();
  const engine::Backend* backend = backends.target.get();
  // A request of max_model_len tokens must fit the KV pool (as vLLM checks at start-up): a
  // --max-model-len past it is refused; the model's context is cut to it, and said.
  const int64_t kv_slots = backend->kv_layout().slots();
  if (max_model_len > kv_slots) {
    if (a.max_model_len > 0) {
      throw InputError(fmt::format(
          "--max-model-len {} is more than the KV cache holds ({} tokens); give a smaller one or "
          "a larger --kv-tokens",
          max_model_len, kv_slots));
    }
    std::cerr << fmt::format(
        "inferlab: note: max model length {} (the model's context) cut to the KV cache's {} "
        "tokens\n",
        max_model_len, kv_slots);
    max_model_len = kv_slots;
  }
  config.max_model_len = max_model_len;  // the scheduler's own check behind the 400
  http_options.max_model_len = max_model_len;
  server::ServingMetrics metrics;
  server::LoopOptions loop_options{
      config, a.max_queue, backends.draft.get(),
      [](const std::string& line) { std::cerr << "inferlab: warning: " << line << '\n'; }};
  server::EngineLoop loop(*backends.target, loop_options, metrics);
  server::OpenAiServer http(loop, tokenizer, metrics, http_options);
  const int port = http.bind();
  std::cerr << fmt::format(
                   "inferlab: serving {} on {}://{}:{} ({}, KV cache {} tokens, max model "
                   "length {}{}; weights loaded{} in {:.1f} s{})\n",
                   http_options.served_model_name, http.https() ? "https" : "http", a.host, port,
                   options.device, backend->kv_layout().slots(), max_model_len,
                   draft_model.empty() ? "" : ", draft model " + draft_model,
                   options.device == "cuda" && options.warm_gemm_rows > 0
                       ? fmt::format(" and GEMMs warmed up to {} rows", options.warm_gemm_rows)
                       : "",
                   ready_s,
                   http_options.api_keys.empty()
                       ? ""
                       : fmt::format("; {} API key(s)", http_options.api_keys.size()))
            << std::flush;
  stopper.serve(http, loop);
  std::cerr << "inferlab: server stopped\n";
  const std::string failure = loop.fatal_error();
  if (!failure.empty()) throw std::runtime_error(failure);  // exit 1: a supervisor restarts it
}

}  // namespace

void register_server(CLI::App& app) {
  auto args = std::make_shared<ServerArgs>();
  CLI::App* cmd = app.add_subcommand(
      "server",
      "Serve a model over an OpenAI-compatible HTTP API (/v1/completions, /v1/chat/completions, "
      "/v1/models, /health, /metrics) until SIGTERM");
  cmd->add_option("--model", args->model, "Checkpoint folder, or a shipped model (random weights)")
      ->required();
  cmd->add_option("--tokenizer", args->tokenizer, "tokenizer.json (default: the checkpoint's)");
  cmd->add_option("--host", args->host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", args->port, "Port (0: any free one)")->capture_default_str();
  cmd->add_option("--served-model-name", args->served_model_name,
                  "The name clients send as 'model' (default: the model's folder or name)");
  cmd->add_option("--device", args->device, "auto, cuda or cpu (the fp32 reference)")
      ->capture_default_str();
  cmd->add_option("--seed", args->seed, "Random weights of a shipped model")->capture_default_str();
  cmd->add_option("--kv-tokens", args->kv_tokens,
                  "KV cache size in tokens (default: GPU memory left; CPU: 8192)");
  cmd->add_option("--block-size", args->block_size, "Tokens per KV block")->capture_default_str();
  cmd->add_option("--max-num-seqs", args->max_num_seqs, "Sequences in a batch")
      ->capture_default_str();
  cmd->add_option("--max-num-batched-tokens", args->max_num_batched_tokens,
                  "Tokens per iteration (prefill chunks and decodes)")
      ->capture_default_str();
  cmd->add_option("--max-model-len", args->max_model_len,
                  "Longest prompt + output (default: the model's context)");
  cmd->add_option("--max-queue", args->max_queue,
                  "Requests waiting beyond --max-num-seqs; more get 429")
      ->capture_default_str();
  cmd->add_option("--policy", args->policy, "chunked or vllm")->capture_default_str();
  cmd->add_option("--preemption", args->preemption,
                  "recompute, or swap (KV blocks to pinned host memory and back)")
      ->capture_default_str();
  cmd->add_flag("--prefix-caching", args->prefix_caching,
                "Share KV blocks of identical prompt prefixes (hash chain over their tokens)");
  cmd->add_option("--speculative", args->speculative,
                  "ngram,k=K: prompt-lookup drafting; draft=MODEL,k=K: a draft model (a checkpoint "
                  "folder or shipped name sharing the vocabulary) beside the target");
  cmd->add_option("--cuda-graphs", args->cuda_graphs, "on|off: decode iterations replay graphs")
      ->capture_default_str();
  cmd->add_option("--gemm-warmup", args->gemm_warmup,
                  "on|off: run every GEMM shape up to --max-num-batched-tokens rows at start-up "
                  "(GPU), so no iteration waits on cuBLASLt's first use of a shape")
      ->capture_default_str();
  cmd->add_option("--gpu-memory-utilization", args->gpu_memory_utilization,
                  "Share of GPU memory for weights and KV cache")
      ->capture_default_str();
  cmd->add_option("--http-threads", args->http_threads, "Connections served at once")
      ->capture_default_str();
  cmd->add_option("--api-key", args->api_keys,
                  "Every request but /health and /metrics needs 'Authorization: Bearer KEY' "
                  "(repeat for several keys)")
      ->envname("INFERLAB_API_KEY");
  cmd->add_option("--api-key-file", args->api_key_file,
                  "Keys, one a line ('#' comments), accepted beside --api-key");
  cmd->add_flag("--protect-metrics", args->protect_metrics, "/metrics needs a key too");
  cmd->add_option("--ssl-certfile", args->ssl_certfile, "PEM certificate (chain): serve HTTPS");
  cmd->add_option("--ssl-keyfile", args->ssl_keyfile, "PEM private key of --ssl-certfile");
  add_engine_switches(cmd, args->switches);
  cmd->callback([args] { run_server(*args); });
}

}  // namespace inferlab::cli
