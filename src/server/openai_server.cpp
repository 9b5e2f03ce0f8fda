#include "server/openai_server.hpp"

#include <fmt/format.h>
#include <httplib.h>
#include <sys/socket.h>

#include <ctime>
#include <thread>

#include "engine/tokenizer/chat.hpp"
#include "server/api_error.hpp"
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

}  // namespace

// One request between its HTTP handler and the engine: the job's prompt size, its text so far.
struct OpenAiServer::Exchange {
  ResponseHeader header;
  int64_t prompt_tokens = 0;
  bool include_usage = false;
  std::shared_ptr<RequestStream> stream;
  TextStream text;
  bool first_chunk = true;
  Exchange(const engine::Tokenizer& tokenizer, std::vector<std::string> stops)
      : text(tokenizer, std::move(stops)) {}
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

GenerationJob OpenAiServer::make_job(const CompletionRequest& r) const {
  if (r.model != options_.served_model_name) {
    throw ApiError(400,
                   fmt::format("the model '{}' does not exist; this server has '{}'", r.model,
                               options_.served_model_name),
                   "model", "model_not_found");
  }
  GenerationJob job;
  try {
    if (r.endpoint == Endpoint::chat_completions) {
      if (!options_.llama3_chat) {
        throw ApiError(400,
                       "this model's tokenizer has no chat template the server knows (Llama 3's)",
                       "messages");
      }
      job.prompt = engine::encode_llama3_chat(tokenizer_, r.messages);
    } else if (r.prompt_text) {
      job.prompt = tokenizer_.encode(*r.prompt_text, tokenizer_.bos_id().has_value());
    } else {
      job.prompt = r.prompt_ids;
    }
  } catch (const InputError& e) {
    throw ApiError(400, e.what(), r.endpoint == Endpoint::chat_completions ? "messages" : "prompt");
  }
  const auto prompt = static_cast<int64_t>(job.prompt.size());
  if (prompt < 1) throw ApiError(400, "the prompt has no tokens", "prompt");
  for (int32_t id : job.prompt) {
    if (id < 0 || id >= options_.vocab_size) {
      throw ApiError(400,
                     fmt::format("token id {} is outside the vocabulary (0 to {})", id,
                                 options_.vocab_size - 1),
                     "prompt");
    }
  }
  const int64_t room = options_.max_model_len - prompt;
  job.max_tokens = r.max_tokens.value_or(r.endpoint == Endpoint::completions ? 16 : room);
  if (room < 1 || job.max_tokens > room) {
    throw ApiError(
        400,
        fmt::format("this model's maximum context length is {} tokens; the request "
                    "asks for {} ({} in the prompt, {} to generate)",
                    options_.max_model_len, prompt + std::max<int64_t>(job.max_tokens, 1), prompt,
                    std::max<int64_t>(job.max_tokens, 1)),
        r.max_tokens ? "max_tokens" : "prompt", "context_length_exceeded");
  }
  // The scheduler's own rule (it never starts a request that cannot finish in the whole pool):
  // the prompt and every generated token but the last hold a KV slot.
  if (prompt + job.max_tokens - 1 > loop_.kv_slots()) {
    throw ApiError(
        400,
        fmt::format("the prompt ({} tokens) and max_tokens ({}) need {} KV slots; the "
                    "KV cache holds {}",
                    prompt, job.max_tokens, prompt + job.max_tokens - 1, loop_.kv_slots()),
        prompt + 1 > loop_.kv_slots() ? "prompt" : "max_tokens");
  }
  job.min_tokens = std::min(r.min_tokens, job.max_tokens);
  job.sampling.temperature = r.temperature;
  job.sampling.top_p = r.top_p;
  job.sampling.top_k = r.top_k;
  // Without a seed each request draws differently (a counter, so runs stay reproducible).
  job.seed = r.seed.value_or(0x9e3779b97f4a7c15ULL * (next_id_.load() + 1));
  if (!r.ignore_eos) job.stop_ids = options_.eos_ids;
  job.stop_ids.insert(job.stop_ids.end(), r.stop_token_ids.begin(), r.stop_token_ids.end());
  return job;
}

void OpenAiServer::handle_completion(const std::string& body, Endpoint endpoint, void* response) {
  auto& res = *static_cast<httplib::Response*>(response);
  if (shutting_down_) throw ApiError(503, "the server is shutting down");
  const CompletionRequest request = parse_completion_request(body, endpoint);
  GenerationJob job = make_job(request);
  auto exchange = std::make_shared<Exchange>(tokenizer_, request.stop);
  const uint64_t number = next_id_++;
  exchange->header = {
      fmt::format("{}-{:016x}", endpoint == Endpoint::chat_completions ? "chatcmpl" : "cmpl",
                  number),
      created_unix_s_, options_.served_model_name, endpoint};
  exchange->prompt_tokens = static_cast<int64_t>(job.prompt.size());
  exchange->include_usage = request.include_usage;
  // Counted before the loop accepts it, so that a shutdown that has seen the loop drain cannot
  // miss it: until its answer is written (a non-stream return, a stream's release).
  ++open_exchanges_;
  try {
    exchange->stream = loop_.submit(std::move(job));
  } catch (...) {
    --open_exchanges_;
    throw;
  }

  // Ends the sequence early when a stop string closed the text.
  const auto stop_if_stopped = [this](Exchange& ex) {
    if (ex.text.stopped() && !ex.stream->cancelled()) {
      ex.stream->cancel();
      loop_.notify_cancel();
    }
  };
  const auto finish_reason = [](const Exchange& ex, const RequestStream::Update& u) {
    return ex.text.stopped() ? std::string("stop") : u.finish_reason;
  };

  if (!request.stream) {
    struct Closing {
      std::atomic<int64_t>& open;
      ~Closing() { --open; }
    } closing{open_exchanges_};
    std::string text;
    while (true) {
      const RequestStream::Update u = exchange->stream->wait(std::chrono::milliseconds(1000));
      text += exchange->text.push(u.tokens);
      stop_if_stopped(*exchange);
      if (!u.finished) continue;
      if (u.finish_reason == "error") throw ApiError(500, u.error);
      text += exchange->text.finish();
      res.set_content(dump_json(completion_json(exchange->header, text, finish_reason(*exchange, u),
                                                exchange->prompt_tokens, u.completion_tokens)),
                      "application/json");
      return;
    }
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, exchange, stop_if_stopped, finish_reason](size_t, httplib::DataSink& sink) {
        Exchange& ex = *exchange;
        const RequestStream::Update u = ex.stream->wait(kPoll);
        const auto send = [&](const nlohmann::json& chunk) {
          const std::string event = sse_event(dump_json(chunk));
          return sink.write(event.data(), event.size());
        };
        std::string text = ex.text.push(u.tokens);
        stop_if_stopped(ex);
        if (u.finished) text += ex.text.finish();
        // A chunk whenever tokens came, even when their text is held back (the first bytes of
        // a character, a possible stop string, a special token): clients time token arrival
        // by chunks. Once a stop string ended the text, nothing more is sent but the end.
        const bool tokens_came = !u.tokens.empty() && !ex.text.stopped();
        if (!text.empty() || tokens_came ||
            (ex.first_chunk && ex.header.endpoint == Endpoint::chat_completions)) {
          if (!send(chunk_json(ex.header, text, "", ex.first_chunk))) return abandon(ex);
          ex.first_chunk = false;
        } else if (!sink.is_writable()) {
          return abandon(ex);  // the client went away while nothing was ready
        }
        if (!u.finished) return true;
        if (u.finish_reason == "error") {
          ApiError error(500, u.error);
          send(error.body());
        } else {
          send(chunk_json(ex.header, "", finish_reason(ex, u), false));
          if (ex.include_usage)
            send(usage_chunk_json(ex.header, ex.prompt_tokens, u.completion_tokens));
        }
        const std::string done = sse_event(kSseDone);
        sink.write(done.data(), done.size());
        sink.done();
        return true;
      },
      [this, exchange](bool success) {
        if (!success) abandon(*exchange);
        --open_exchanges_;
      });
}

bool OpenAiServer::abandon(Exchange& exchange) {
  exchange.stream->cancel();
  loop_.notify_cancel();
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
    res.set_content(dump_json({{"object", "list"}, {"data", nlohmann::json::array({model})}}),
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
