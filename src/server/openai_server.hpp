#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/tokenizer/tokenizer.hpp"
#include "server/api_keys.hpp"
#include "server/engine_loop.hpp"
#include "server/openai_request.hpp"
#include "server/serving_metrics.hpp"
#include "server/tls.hpp"

namespace httplib {
class Server;
}

namespace inferlab::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;  // 0: any free port (tests)
  std::string served_model_name;
  int64_t max_model_len = 0;                // prompt + max_tokens; the model's context
  int64_t vocab_size = 0;                   // token ids must be below it
  size_t max_body_bytes = size_t{4} << 20;  // larger: 413
  int http_threads = 512;                   // concurrent connections served
  std::vector<int32_t> eos_ids;             // end generation unless ignore_eos
  bool llama3_chat = true;                  // the tokenizer has Llama 3's chat tokens
  // With keys, every route but /health (and /metrics unless protect_metrics) needs
  // `Authorization: Bearer <key>`; without, every request passes.
  ApiKeys api_keys;
  bool protect_metrics = false;
  TlsFiles tls;  // both files: HTTPS
};

// The OpenAI-compatible HTTP front of an EngineLoop (cpp-httplib): /v1/completions and
// /v1/chat/completions (streamed as server-sent events ending in `data: [DONE]`), /v1/models,
// /health and /metrics (Prometheus text), over HTTP or HTTPS. Every refusal is an OpenAI-style
// JSON error: 400 for a malformed or impossible request, 401 without a valid API key, 413 for a
// body over the limit, 429 for a full queue, 500 for a request the engine failed, 503 while
// shutting down or once the engine is unusable.
class OpenAiServer {
 public:
  // InputError when the TLS files cannot be used.
  OpenAiServer(EngineLoop& loop, const engine::Tokenizer& tokenizer, ServingMetrics& metrics,
               ServerOptions options);
  ~OpenAiServer();
  // Binds the socket; returns the port (the chosen one with port 0). InputError when it cannot.
  int bind();
  // Serves until shutdown(); call after bind().
  void serve();
  // Graceful stop (SIGTERM): new requests get 503, those accepted finish, then serve() returns.
  // Any thread, at any time: before serve() too (serve() then returns at once).
  void shutdown();
  bool https() const { return options_.tls.enabled(); }

  // The token-level jobs for a parsed request, one per choice (prompt i's n choices, then
  // prompt i + 1's), public for tests: ApiError 400 for an unknown model, a prompt that is
  // empty, has ids outside the vocabulary or does not fit the context or the KV cache.
  std::vector<GenerationJob> make_jobs(const CompletionRequest& request) const;

 private:
  struct Exchange;
  void install_routes();
  // Whether the request may pass without a key, or carries one; else it is answered 401.
  bool authorized(const std::string& path, const std::string& authorization) const;
  // One prompt's job; `param` names the prompt's field in errors.
  GenerationJob job_for(const CompletionRequest& request, std::vector<int32_t> prompt,
                        const char* param) const;
  void handle_completion(const std::string& body, Endpoint endpoint, void* response);
  // A request that does not stream: every choice to its end, then one answer.
  void answer_whole(Exchange& exchange, void* response);
  // A stream's next chunks (httplib's content provider): false once the client went away.
  bool stream_chunks(Exchange& exchange, void* data_sink);
  // Ends the sequences of the choices still running (the client went away, or one choice
  // failed); false.
  bool abandon(Exchange& exchange);

  EngineLoop& loop_;
  const engine::Tokenizer& tokenizer_;
  ServingMetrics& metrics_;
  ServerOptions options_;
  std::unique_ptr<httplib::Server> http_;
  std::atomic<bool> shutting_down_{false};
  // serve()'s progress: 0 not called, 1 inside, 2 returned. httplib's stop() does nothing
  // before its listen loop runs, so shutdown() waits for that loop when serve() is entering it.
  std::atomic<int> serve_state_{0};
  std::atomic<uint64_t> next_id_{1};
  std::atomic<int64_t> open_exchanges_{0};  // accepted, answer not yet written
  int listen_socket_ = -1;                  // set while binding
  const long created_unix_s_;
};

}  // namespace inferlab::server
