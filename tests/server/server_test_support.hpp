#pragma once
// A tiny Llama (random weights, the real Llama 3 vocabulary and tokenizer) on the CPU reference,
// served in-process on a free port, and an HTTP client for it.
#include <httplib.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "engine/cpu/cpu_backend.hpp"
#include "engine/init_weights.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "server/engine_loop.hpp"
#include "server/openai_server.hpp"
#include "server/sse.hpp"
#include "test_support.hpp"
#include "util/data_dir.hpp"

namespace inferlab::server::testing {

inline constexpr int64_t kContext = 256;
inline constexpr uint64_t kWeightSeed = 3;

inline engine::LlamaConfig tiny_config() {
  return engine::parse_llama_config(inferlab::testing::tiny_llama_config(128256, kContext), "tiny",
                                    "test");
}

inline std::unique_ptr<engine::CpuBackend> tiny_backend(int64_t kv_blocks = 64) {
  const auto config = tiny_config();
  return std::make_unique<engine::CpuBackend>(
      config, engine::random_llama_weights(config, kWeightSeed), 16, kv_blocks);
}

struct ServerSetup {
  int64_t max_num_seqs = 8, max_queue = 64, kv_blocks = 64;
  bool prefix_caching = false;
  int speculative_k = 0;  // n-gram drafts verified per decode step
  // With speculative_k: drafts by a draft model, a twin of the target (the same weights).
  bool draft_model = false;
  PreemptionMode preemption = PreemptionMode::recompute;
  size_t max_body_bytes = size_t{1} << 20;
  std::vector<std::string> api_keys{};  // the server's; client() sends none
  bool protect_metrics = false;
  TlsFiles tls{};  // HTTPS; client() then trusts tls.certfile
  // Puts something around the model's backend (a fault injector); null: the backend as it is.
  std::function<std::unique_ptr<engine::Backend>(std::unique_ptr<engine::Backend>)> wrap_backend{};
};

class TestServer {
 public:
  explicit TestServer(ServerSetup setup = {})
      : tokenizer_(
            engine::Tokenizer::from_file(fetched_tokenizer_dir("llama3") / "tokenizer.json")),
        backend_(tiny_backend(setup.kv_blocks)),
        draft_(setup.draft_model ? tiny_backend(setup.kv_blocks) : nullptr),
        ca_cert_(setup.tls.certfile) {
    if (setup.wrap_backend) backend_ = setup.wrap_backend(std::move(backend_));
    LoopOptions loop;
    loop.config.policy = SchedulePolicy::chunked;
    loop.config.max_num_seqs = setup.max_num_seqs;
    loop.config.max_num_batched_tokens = 512;
    loop.config.prefix_caching = setup.prefix_caching;
    loop.config.speculative.k = setup.speculative_k;
    loop.config.preemption = setup.preemption;
    loop.max_waiting = setup.max_queue;
    loop.draft = draft_.get();
    loop_ = std::make_unique<EngineLoop>(*backend_, loop, metrics_);
    ServerOptions options;
    options.port = 0;
    options.served_model_name = "tiny";
    options.max_model_len = kContext;
    options.vocab_size = 128256;
    options.max_body_bytes = setup.max_body_bytes;
    options.http_threads = 64;
    options.eos_ids = {128001, 128009};
    options.api_keys = ApiKeys(setup.api_keys);
    options.protect_metrics = setup.protect_metrics;
    options.tls = setup.tls;
    http_ = std::make_unique<OpenAiServer>(*loop_, tokenizer_, metrics_, options);
    port_ = http_->bind();
    serving_ = std::thread([this] { http_->serve(); });
  }
  ~TestServer() {
    http_->shutdown();
    serving_.join();
  }
  std::string url() const {
    return (ca_cert_.empty() ? "http://127.0.0.1:" : "https://127.0.0.1:") + std::to_string(port_);
  }
  httplib::Client client() const {
    httplib::Client c(url());
    // Generous: under ASan+UBSan at -O0 beside another server test (scripts/sanitize.sh runs
    // them two at a time on CI's 2 cores) a 20-token speculative answer took over 60 s.
    c.set_read_timeout(300, 0);
    if (!ca_cert_.empty()) c.set_ca_cert_path(ca_cert_);
    return c;
  }
  const engine::Tokenizer& tokenizer() const { return tokenizer_; }
  ServingMetrics& metrics() { return metrics_; }
  EngineLoop& loop() { return *loop_; }
  OpenAiServer& http() { return *http_; }
  int port() const { return port_; }

 private:
  engine::Tokenizer tokenizer_;
  std::unique_ptr<engine::Backend> backend_, draft_;
  std::string ca_cert_;
  ServingMetrics metrics_;
  std::unique_ptr<EngineLoop> loop_;
  std::unique_ptr<OpenAiServer> http_;
  int port_ = 0;
  std::thread serving_;
};

// --- Requests ---------------------------------------------------------------------------------

// A JSON request; the answer's JSON (the status in *status). Headers: e.g. Authorization.
inline nlohmann::json post(const TestServer& server, const std::string& path,
                           const nlohmann::json& body, int* status = nullptr,
                           const httplib::Headers& headers = {}) {
  auto client = server.client();
  auto res = client.Post(path.c_str(), headers, body.dump(), "application/json");
  if (!res) throw std::runtime_error("no response: " + httplib::to_string(res.error()));
  if (status) *status = res->status;
  return nlohmann::json::parse(res->body);
}

struct Streamed {
  int status = 0;
  std::vector<nlohmann::json> chunks;
  bool done = false;  // ended with [DONE]
};

// A streamed request; `stop_after` chunks, then the client hangs up (0: read to the end).
inline Streamed post_stream(const TestServer& server, const std::string& path,
                            const nlohmann::json& body, size_t stop_after = 0) {
  auto client = server.client();
  Streamed out;
  SseParser parser;
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  req.response_handler = [&](const httplib::Response& r) {
    out.status = r.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
    for (auto& event : parser.feed(std::string_view(data, size))) {
      if (event == kSseDone) {
        out.done = true;
      } else {
        out.chunks.push_back(nlohmann::json::parse(event));
      }
    }
    return stop_after == 0 || out.chunks.size() < stop_after;
  };
  client.send(req);
  return out;
}

// A greedy completion of `tokens` tokens that ignores EOS.
inline nlohmann::json greedy(const std::string& prompt, int64_t tokens) {
  return {{"model", "tiny"},
          {"prompt", prompt},
          {"max_tokens", tokens},
          {"temperature", 0},
          {"ignore_eos", true}};
}

}  // namespace inferlab::server::testing
