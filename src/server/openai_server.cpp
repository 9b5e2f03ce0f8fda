#include "server/openai_server.hpp"

#include <fmt/format.h>
#include <httplib.h>
#include <sys/socket.h>

#include <ctime>
#include <thread>

#include "engine/tokenizer/chat.hpp"
#include "server/api_error.hpp"
#include "server/completion_choice.hpp"
#include "server/openai_response.hpp"
#include "server/sse.hpp"
#include "server/text_stream.hpp"
#include "util/error.hpp"

namespace inferlab::server {

namespace {

constexpr auto kPoll = std::chrono::milliseconds(50);
constexpr int kListenBacklog = 4096;  // the kernel caps it at net.core.somaxconn
// On SIGTERM, how long finished answers may take to reach slow clients before the server stops.
constexpr auto kShutdownWriteLimit = std::chrono::seconds(30);

void send_error(httplib::Response& res, const ApiError& error) {
  res.status = error.status();
  res.set_content(dump_json(error.body()), "application/json");
}

// A Prometheus label value: backslash, quote and newline escaped.
std::string label_value(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"') out.push_back('\\');
    out.push_back(c == '\n' ? 'n' : c);
  }
  return out;
}

// Whether a piece's logprobs hold any token (completions: tokens, chat: content).
bool has_entries(const ResponseJson& logprobs) {
  if (!logprobs.is_object()) return false;
  const auto it = logprobs.find(logprobs.contains("content") ? "content" : "tokens");
  return it != logprobs.end() && !it->empty();
}

// Appends a piece's logprobs to the whole answer's (each list after its own).
void append_logprobs(ResponseJson& whole, ResponseJson piece) {
  if (!piece.is_object()) return;
  if (!whole.is_object()) {
    whole = std::move(piece);
    return;
  }
  for (auto& [key, list] : piece.items()) {
    for (auto& entry : list) whole[key].push_back(std::move(entry));
  }
}

}  // namespace

// One request between its HTTP handler and the engine: its choices, the prompts' size.
struct OpenAiServer::Exchange {
  ResponseHeader header;
  int64_t prompt_tokens = 0;
  bool include_usage = false;
  std::vector<ChoiceStream> choices;
  std::vector<bool> first_chunk;  // per choice: nothing sent yet
  int64_t completion_tokens = 0;  // of the finished choices
};

OpenAiServer::OpenAiServer(EngineLoop& loop, const engine::Tokenizer& tokenizer,
                           ServingMetrics& metrics, ServerOptions options)
    : loop_(loop),
      tokenizer_(tokenizer),
      metrics_(metrics),
      options_(std::move(options)),
      http_(make_http_server(options_.tls)),
      created_unix_s_(static_cast<long>(std::time(nullptr))) {
  const int threads = options_.http_threads;
  http_->new_task_queue = [threads] {
    return new httplib::ThreadPool(static_cast<size_t>(threads));
  };
  http_->set_payload_max_length(options_.max_body_bytes);
  // httplib listens with a backlog of 5: a burst of clients (256 connecting at once) overflows
  // it and the kernel drops their handshakes. Keep the listening socket to listen() again
  // with a deep backlog after the bind (Linux takes a second listen() as a new backlog).
  http_->set_socket_options([this](socket_t sock) {
    httplib::default_socket_options(sock);
    listen_socket_ = sock;
  });
  http_->set_read_timeout(30, 0);
  http_->set_write_timeout(30, 0);
  install_routes();
}

OpenAiServer::~OpenAiServer() = default;

int OpenAiServer::bind() {
  int port = options_.port;
  if (port == 0) {
    port = http_->bind_to_any_port(options_.host);
    if (port < 0) throw InputError("cannot bind a port on " + options_.host);
  } else if (!http_->bind_to_port(options_.host, port)) {
    throw InputError(fmt::format("cannot listen on {}:{} (in use, or not an address here)",
                                 options_.host, port));
  }
  if (listen_socket_ >= 0) ::listen(listen_socket_, kListenBacklog);
  return port;
}

void OpenAiServer::serve() {
  serve_state_ = 1;
  // Either this sees shutting_down_, or shutdown() sees serve_state_ 1 and waits for the listen
  // loop to stop it (both atomics sequentially consistent).
  if (!shutting_down_) http_->listen_after_bind();
  serve_state_ = 2;
}

void OpenAiServer::shutdown() {
  shutting_down_ = true;
  loop_.drain();  // everything accepted finishes in the engine,
  // then its answer is written out (httplib stops calling a stream's provider once stopped).
  const auto deadline = std::chrono::steady_clock::now() + kShutdownWriteLimit;
  while (open_exchanges_.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // serve() entered but its listen loop not yet running: stop() would do nothing and the loop
  // would run on. It starts at once (or serve() saw shutting_down_ and returns).
  while (serve_state_.load() == 1 && !http_->is_running()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  http_->stop();
}

GenerationJob OpenAiServer::job_for(const CompletionRequest& r, std::vector<int32_t> prompt_ids,
                                    const char* param) const {
  GenerationJob job;
  job.prompt = std::move(prompt_ids);
  const auto prompt = static_cast<int64_t>(job.prompt.size());
  if (prompt < 1) throw ApiError(400, "the prompt has no tokens", param);
  for (int32_t id : job.prompt) {
    if (id < 0 || id >= options_.vocab_size) {
      throw ApiError(400,
                     fmt::format("token id {} is outside the vocabulary (0 to {})", id,
                                 options_.vocab_size - 1),
                     param);
    }
  }
  const int64_t room = options_.max_model_len - prompt;
  job.max_tokens = r.max_tokens.value_or(r.endpoint == Endpoint::completions ? 16 : room);
  // max_tokens 0 (echo): the prompt is scored in the pass that yields a first token, which the
  // answer leaves out (as vLLM runs it with max_tokens 1).
  const bool score_only = job.max_tokens == 0;
  job.max_tokens = std::max<int64_t>(job.max_tokens, 1);
  if (room < 1 || job.max_tokens > room) {
    throw ApiError(
        400,
        fmt::format("this model's maximum context length is {} tokens; the request "
                    "asks for {} ({} in the prompt, {} to generate)",
                    options_.max_model_len, prompt + job.max_tokens, prompt, job.max_tokens),
        r.max_tokens ? "max_tokens" : param, "context_length_exceeded");
  }
  // The scheduler's own rule (it never starts a request that cannot finish in the whole pool):
  // the prompt and every generated token but the last hold a KV slot.
  if (prompt + job.max_tokens - 1 > loop_.kv_slots()) {
    throw ApiError(
        400,
        fmt::format("the prompt ({} tokens) and max_tokens ({}) need {} KV slots; the "
                    "KV cache holds {}",
                    prompt, job.max_tokens, prompt + job.max_tokens - 1, loop_.kv_slots()),
        prompt + 1 > loop_.kv_slots() ? param : "max_tokens");
  }
  job.min_tokens = std::min(r.min_tokens, job.max_tokens);
  job.sampling.temperature = r.temperature;
  job.sampling.top_p = r.top_p;
  job.sampling.top_k = r.top_k;
  if (!r.ignore_eos) job.stop_ids = options_.eos_ids;
  job.stop_ids.insert(job.stop_ids.end(), r.stop_token_ids.begin(), r.stop_token_ids.end());
  job.logprobs.sampled = r.logprobs.has_value() && !score_only;
  job.logprobs.prompt = r.logprobs.has_value() && r.echo;
  job.logprobs.top = r.logprobs.value_or(0);
  return job;
}

std::vector<GenerationJob> OpenAiServer::make_jobs(const CompletionRequest& r) const {
  if (r.model != options_.served_model_name) {
    throw ApiError(400,
                   fmt::format("the model '{}' does not exist; this server has '{}'", r.model,
                               options_.served_model_name),
                   "model", "model_not_found");
  }
  const bool chat = r.endpoint == Endpoint::chat_completions;
  const char* param = chat ? "messages" : "prompt";
  std::vector<std::vector<int32_t>> prompts;
  try {
    if (chat) {
      if (!options_.llama3_chat) {
        throw ApiError(400,
                       "this model's tokenizer has no chat template the server knows (Llama 3's)",
                       "messages");
      }
      prompts.push_back(engine::encode_llama3_chat(tokenizer_, r.messages));
    }
    for (const PromptInput& p : r.prompts) {
      prompts.push_back(p.text ? tokenizer_.encode(*p.text, tokenizer_.bos_id().has_value())
                               : p.ids);
    }
  } catch (const InputError& e) {
    throw ApiError(400, e.what(), param);
  }
  // Without a seed each request draws differently (a counter, so runs stay reproducible); the
  // choices of one request draw from consecutive seeds.
  const uint64_t seed = r.seed.value_or(0x9e3779b97f4a7c15ULL * (next_id_.load() + 1));
  std::vector<GenerationJob> jobs;
  for (auto& prompt : prompts) {
    const GenerationJob job = job_for(r, std::move(prompt), param);
    for (int64_t j = 0; j < r.n; ++j) {
      jobs.push_back(job);
      jobs.back().seed = seed + jobs.size() - 1;
    }
  }
  return jobs;
}

void OpenAiServer::handle_completion(const std::string& body, Endpoint endpoint, void* response) {
  auto& res = *static_cast<httplib::Response*>(response);
  if (shutting_down_) throw ApiError(503, "the server is shutting down");
  const CompletionRequest request = parse_completion_request(body, endpoint);
  std::vector<GenerationJob> jobs = make_jobs(request);
  auto exchange = std::make_shared<Exchange>();
  const uint64_t number = next_id_++;
  exchange->header = {
      fmt::format("{}-{:016x}", endpoint == Endpoint::chat_completions ? "chatcmpl" : "cmpl",
                  number),
      created_unix_s_, options_.served_model_name, endpoint};
  exchange->include_usage = request.include_usage;
  std::vector<ChoiceSetup> setups;
  for (size_t i = 0; i < jobs.size(); ++i) {
    // The n choices of a prompt share it: it counts once.
    if (i % static_cast<size_t>(request.n) == 0) {
      exchange->prompt_tokens += static_cast<int64_t>(jobs[i].prompt.size());
    }
    ChoiceSetup setup;
    setup.index = static_cast<int64_t>(i);
    setup.endpoint = endpoint;
    setup.stops = request.stop;
    setup.logprobs = request.logprobs;
    setup.echo = request.echo;
    setup.score_only = request.max_tokens == 0;
    if (request.echo) setup.prompt = jobs[i].prompt;
    setups.push_back(std::move(setup));
  }
  // Counted before the loop accepts it, so that a shutdown that has seen the loop drain cannot
  // miss it: until its answer is written (a non-stream return, a stream's release).
  ++open_exchanges_;
  std::vector<std::shared_ptr<RequestStream>> streams;
  try {
    streams = loop_.submit_all(std::move(jobs));
  } catch (...) {
    --open_exchanges_;
    throw;
  }
  exchange->choices.reserve(streams.size());
  for (size_t i = 0; i < streams.size(); ++i) {
    exchange->choices.emplace_back(tokenizer_, std::move(setups[i]), std::move(streams[i]));
  }
  exchange->first_chunk.assign(exchange->choices.size(), true);
  if (!request.stream) return answer_whole(*exchange, &res);
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, exchange](size_t, httplib::DataSink& sink) { return stream_chunks(*exchange, &sink); },
      [this, exchange](bool success) {
        if (!success) abandon(*exchange);
        --open_exchanges_;
      });
}

void OpenAiServer::answer_whole(Exchange& ex, void* response) {
  struct Closing {
    OpenAiServer& server;
    Exchange& ex;
    ~Closing() {
      server.abandon(ex);  // choices still running when the answer is an error end here
      --server.open_exchanges_;
    }
  } closing{*this, ex};
  std::vector<ChoiceJson> answers;
  for (ChoiceStream& choice : ex.choices) {
    ChoiceJson answer{choice.index(), "", "", nullptr};
    while (true) {
      ChoiceStream::Piece piece = choice.next(std::chrono::milliseconds(1000));
      if (piece.cancelled) loop_.notify_cancel();
      answer.text += piece.json.text;
      append_logprobs(answer.logprobs, std::move(piece.json.logprobs));
      if (!piece.finished) continue;
      if (piece.json.finish_reason == "error") throw ApiError(500, piece.error);
      answer.finish_reason = piece.json.finish_reason;
      ex.completion_tokens += piece.completion_tokens;
      break;
    }
    answers.push_back(std::move(answer));
  }
  static_cast<httplib::Response*>(response)->set_content(
      dump_json(completion_json(ex.header, answers, ex.prompt_tokens, ex.completion_tokens)),
      "application/json");
}

bool OpenAiServer::stream_chunks(Exchange& ex, void* data_sink) {
  auto& sink = *static_cast<httplib::DataSink*>(data_sink);
  const auto send = [&](const auto& chunk) {
    const std::string event = sse_event(dump_json(chunk));
    return sink.write(event.data(), event.size());
  };
  const bool chat = ex.header.endpoint == Endpoint::chat_completions;
  bool waited = false, sent = false, running = false, failed = false;
  for (size_t i = 0; i < ex.choices.size(); ++i) {
    ChoiceStream& choice = ex.choices[i];
    if (choice.finished()) continue;
    // The first choice still running is waited for; the others (run in the same iterations)
    // give what they have.
    ChoiceStream::Piece piece =
        choice.next(waited ? std::chrono::milliseconds(0) : std::chrono::milliseconds(kPoll));
    waited = true;
    if (piece.cancelled) loop_.notify_cancel();
    // A chunk whenever tokens came, even when their text is held back (the first bytes of a
    // character, a possible stop string, a special token): clients time token arrival by
    // chunks. Once a stop string ended the text, nothing more is sent but the end.
    const bool logprobs = has_entries(piece.json.logprobs);
    if (!piece.json.text.empty() || piece.tokens_came || logprobs || (ex.first_chunk[i] && chat)) {
      ChoiceJson delta{choice.index(), std::move(piece.json.text), "",
                       logprobs ? std::move(piece.json.logprobs) : ResponseJson(nullptr)};
      if (!send(chunk_json(ex.header, delta, ex.first_chunk[i]))) return abandon(ex);
      ex.first_chunk[i] = false;
      sent = true;
    }
    if (!piece.finished) {
      running = true;
      continue;
    }
    if (piece.json.finish_reason == "error") {
      abandon(ex);  // the other choices end too: the answer is this error
      ApiError error(500, piece.error);
      send(error.body());
      running = false;
      failed = true;
      break;
    }
    ex.completion_tokens += piece.completion_tokens;
    send(chunk_json(ex.header, {choice.index(), "", piece.json.finish_reason, nullptr}, false));
  }
  if (!sent && running && !sink.is_writable()) {
    return abandon(ex);  // the client went away while nothing was ready
  }
  if (running) return true;
  if (ex.include_usage && !failed) {
    send(usage_chunk_json(ex.header, ex.prompt_tokens, ex.completion_tokens));
  }
  const std::string done = sse_event(kSseDone);
  sink.write(done.data(), done.size());
  sink.done();
  return true;
}

bool OpenAiServer::abandon(Exchange& exchange) {
  bool cancelled = false;
  for (ChoiceStream& choice : exchange.choices) {
    if (!choice.finished()) cancelled = choice.cancel() || cancelled;
  }
  if (cancelled) loop_.notify_cancel();
  return false;
}

bool OpenAiServer::authorized(const std::string& path, const std::string& authorization) const {
  if (options_.api_keys.empty()) return true;
  if (path == "/health") return true;
  if (path == "/metrics" && !options_.protect_metrics) return true;
  return options_.api_keys.authorizes(authorization);  // everything else, unknown routes too
}

void OpenAiServer::install_routes() {
  auto& http = *http_;
  // Before the route and before the body is read. The same answer for a missing and a wrong key.
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (authorized(req.path, req.get_header_value("Authorization"))) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    metrics_.record_refused(401);
    res.set_header("WWW-Authenticate", "Bearer");
    send_error(res, ApiError(401,
                             "a valid API key is required: send the header 'Authorization: Bearer "
                             "<key>' with a key this server was given",
                             "", "invalid_api_key", "invalid_request_error"));
    return httplib::Server::HandlerResponse::Handled;
  });
  const auto completion = [this](Endpoint endpoint) {
    return [this, endpoint](const httplib::Request& req, httplib::Response& res) {
      try {
        handle_completion(req.body, endpoint, &res);
      } catch (const ApiError& e) {
        metrics_.record_refused(e.status());
        send_error(res, e);
      }
    };
  };
  http.Post("/v1/completions", completion(Endpoint::completions));
  http.Post("/v1/chat/completions", completion(Endpoint::chat_completions));
  http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    const nlohmann::json model = {{"id", options_.served_model_name},
                                  {"object", "model"},
                                  {"created", created_unix_s_},
                                  {"owned_by", "inferlab"},
                                  {"max_model_len", options_.max_model_len}};
    res.set_content(
        dump_json(nlohmann::json{{"object", "list"}, {"data", nlohmann::json::array({model})}}),
        "application/json");
  });
  http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (shutting_down_) return send_error(res, ApiError(503, "the server is shutting down"));
    if (!loop_.fatal_error().empty()) {
      return send_error(res, ApiError(503, "the engine failed; see the server's log"));
    }
    res.set_content("{}", "application/json");
  });
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_.prometheus_text(label_value(options_.served_model_name)),
                    "text/plain; version=0.0.4");
  });
  // Anything httplib refuses itself (no such route: 404, wrong method, body too large: 413)
  // still gets a JSON error body.
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string message = fmt::format("{} {}: no such route", req.method, req.path);
    if (res.status == 413) message = "the request body is larger than the server accepts";
    if (res.status == 400) message = "malformed HTTP request";
    send_error(res, ApiError(res.status, message));
  });
  http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "internal error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        send_error(res, ApiError(500, what));
      });
}

}  // namespace inferlab::server
