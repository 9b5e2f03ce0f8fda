#include "server/loadgen.hpp"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "server/sse.hpp"
#include "util/error.hpp"

namespace inferlab::server {

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

std::vector<int32_t> draw_ids(uint64_t seed, uint64_t stream, int64_t count, int64_t vocab) {
  std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ULL + stream);
  std::vector<int32_t> ids(static_cast<size_t>(std::max<int64_t>(count, 0)));
  for (auto& id : ids) id = static_cast<int32_t>(rng() % static_cast<uint64_t>(vocab));
  return ids;
}

httplib::Client make_client(const LoadgenOptions& options, double timeout_s) {
  httplib::Client client(options.url);
  if (!options.api_key.empty()) client.set_bearer_token_auth(options.api_key);
  if (!options.ca_cert.empty()) client.set_ca_cert_path(options.ca_cert);
  const auto seconds = static_cast<time_t>(timeout_s);
  const auto micros = static_cast<time_t>((timeout_s - static_cast<double>(seconds)) * 1e6);
  client.set_connection_timeout(10, 0);
  client.set_read_timeout(seconds, micros);
  client.set_write_timeout(30, 0);
  return client;
}

// One streamed request, timed on `start`'s clock; fills `outcome` or returns why it failed.
std::string run_one(const ServeRequest& request, const std::vector<int32_t>& prompt,
                    const LoadgenOptions& options, Clock::time_point start,
                    RequestOutcome& outcome) {
  const auto since_start = [&] {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  const json body = {{"model", options.model},
                     {"prompt", prompt},
                     {"max_tokens", request.output_tokens},
                     {"min_tokens", request.output_tokens},
                     {"ignore_eos", true},
                     {"temperature", 0},
                     {"stream", true},
                     {"stream_options", {{"include_usage", true}}}};
  auto client = make_client(options, options.timeout_s);
  outcome.arrival_s = since_start();
  const Clock::time_point deadline =
      Clock::now() +
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.timeout_s));
  SseParser parser;
  std::vector<double> token_times;  // when each token-bearing chunk came
  int64_t usage_tokens = -1;
  bool done = false, timed_out = false;
  std::string error;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  int status = 0;
  std::string error_body;
  req.response_handler = [&](const httplib::Response& r) {
    status = r.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
    const double now = since_start();
    if (status != 200) {
      if (error_body.size() < 512) error_body.append(data, std::min<size_t>(size, 512));
      return true;
    }
    try {
      for (const auto& event : parser.feed(std::string_view(data, size))) {
        if (event == kSseDone) {
          done = true;
          continue;
        }
        const json chunk = json::parse(event);
        if (chunk.contains("error")) {
          error = "error event: " + chunk["error"].value("message", std::string("?"));
          return false;
        }
        if (chunk.contains("usage") && chunk["usage"].is_object()) {
          usage_tokens = chunk["usage"].value("completion_tokens", int64_t{-1});
        }
        // A token event: a choice that is not the closing one. Its text may be empty (the
        // server holds back the first bytes of a character): vLLM's benchmark_serving counts
        // only chunks with text, which on random weights (many byte-fragment tokens) moves
        // TTFT to the next token.
        const auto& choices = chunk.value("choices", json::array());
        if (!choices.empty() && choices[0].is_object()) {
          const json& choice = choices[0];
          const bool closing =
              choice.contains("finish_reason") && !choice["finish_reason"].is_null();
          const bool has_text = choice.value("text", std::string()).size() > 0 ||
                                (choice.contains("delta") && choice["delta"].is_object() &&
                                 choice["delta"].value("content", std::string()).size() > 0);
          if (!closing || has_text) token_times.push_back(now);
        }
      }
    } catch (const std::exception& e) {
      error = std::string("malformed stream: ") + e.what();
      return false;
    }
    if (Clock::now() > deadline) {
      timed_out = true;
      return false;
    }
    return true;
  };
  const auto result = client.send(req);
  outcome.finish_s = since_start();
  if (!error.empty()) return error;
  if (timed_out) return "timed out";
  if (!result) return "connection: " + httplib::to_string(result.error());
  if (status != 200) return "HTTP " + std::to_string(status) + ": " + error_body;
  if (!done) return "stream ended without [DONE]";
  // Tokens: what the usage says; chunks can carry several tokens (or a token no text).
  const int64_t tokens =
      usage_tokens >= 0 ? usage_tokens : static_cast<int64_t>(token_times.size());
  if (tokens < request.output_tokens) {
    return "got " + std::to_string(tokens) + " of " + std::to_string(request.output_tokens) +
           " tokens";
  }
  if (token_times.empty()) return "no token in the stream";
  outcome.output_tokens = tokens;
  outcome.first_token_s = token_times.front();
  // Gaps between token-bearing chunks, as vLLM's benchmark takes ITL (a chunk may carry
  // several tokens; TPOT, from the first and last token and the count, does not depend on it).
  for (size_t i = 1; i < token_times.size(); ++i) {
    outcome.inter_token_s.push_back(token_times[i] - token_times[i - 1]);
  }
  return "";
}

}  // namespace

std::vector<int32_t> loadgen_prompt(const ServeRequest& request, size_t index, uint64_t seed,
                                    int64_t vocab_size) {
  std::vector<int32_t> ids = draw_ids(seed, 2 * index, request.prompt_tokens, vocab_size);
  if (request.prefix_id >= 0 && request.prefix_tokens > 0) {
    const auto prefix =
        draw_ids(seed, 2 * static_cast<uint64_t>(request.prefix_id) + 1,
                 std::min(request.prefix_tokens, request.prompt_tokens), vocab_size);
    std::copy(prefix.begin(), prefix.end(), ids.begin());
  }
  return ids;
}

std::string first_served_model(const LoadgenOptions& options) {
  const std::string& url = options.url;
  auto client = make_client(options, 10);
  const auto res = client.Get("/v1/models");
  if (!res) {
    throw InputError("cannot reach " + url + ": " + httplib::to_string(res.error()));
  }
  if (res->status == 401) {
    throw InputError(url + " wants an API key (HTTP 401): give --api-key or INFERLAB_API_KEY");
  }
  const json list = json::parse(res->body, nullptr, false);
  if (res->status != 200 || list.is_discarded() || !list.contains("data") ||
      !list["data"].is_array() || list["data"].empty() || !list["data"][0].contains("id") ||
      !list["data"][0]["id"].is_string()) {
    throw InputError(url + "/v1/models did not list a model (HTTP " + std::to_string(res->status) +
                     "); give --model");
  }
  return list["data"][0]["id"].get<std::string>();
}

LoadgenResult run_loadgen(const std::vector<ServeRequest>& requests, const LoadgenOptions& given) {
  if (!given.url.starts_with("http://") && !given.url.starts_with("https://")) {
    throw InputError("--url must start with http:// or https:// (got '" + given.url + "')");
  }
  if (!given.ca_cert.empty() && !std::ifstream(given.ca_cert)) {
    throw InputError("cannot read --ca-cert '" + given.ca_cert + "'");
  }
  if (given.vocab_size < 1 || !(given.timeout_s > 0) || given.max_concurrency < 0) {
    throw InputError("--vocab-size and --timeout-s must be positive, --max-concurrency >= 0");
  }
  LoadgenOptions options = given;
  if (options.model.empty()) options.model = first_served_model(options);
  LoadgenResult out;
  out.model = options.model;
  out.run.requests.resize(requests.size());
  std::vector<size_t> order(requests.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return requests[a].arrival_s < requests[b].arrival_s;
  });
  const double first_arrival = requests.empty() ? 0.0 : requests[order.front()].arrival_s;

  // Shared with the detached request threads; each holds it until it has let go of the lock.
  struct Shared {
    std::mutex mutex;
    std::condition_variable changed;
    int64_t in_flight = 0;
    std::vector<std::string> errors;
  };
  auto shared = std::make_shared<Shared>();
  shared->errors.resize(requests.size());
  const Clock::time_point start = Clock::now();
  for (size_t i : order) {
    const ServeRequest& request = requests[i];
    std::this_thread::sleep_until(
        start + std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double>(request.arrival_s - first_arrival)));
    std::vector<int32_t> prompt = loadgen_prompt(request, i, options.seed, options.vocab_size);
    {
      std::unique_lock lock(shared->mutex);
      shared->changed.wait(lock, [&] {
        return options.max_concurrency == 0 || shared->in_flight < options.max_concurrency;
      });
      ++shared->in_flight;
    }
    RequestOutcome& outcome = out.run.requests[i];
    outcome.prompt_tokens = request.prompt_tokens;
    outcome.output_tokens = request.output_tokens;
    // Detached: a finished thread's resources go at once; the count says when all are back.
    std::thread([shared, &requests, &options, &out, start, i, prompt = std::move(prompt)] {
      std::string error;
      try {
        error = run_one(requests[i], prompt, options, start, out.run.requests[i]);
      } catch (const std::exception& e) {
        error = e.what();
      }
      std::lock_guard lock(shared->mutex);
      shared->errors[i] = std::move(error);
      --shared->in_flight;
      shared->changed.notify_all();
    }).detach();
  }
  {
    std::unique_lock lock(shared->mutex);
    shared->changed.wait(lock, [&] { return shared->in_flight == 0; });
  }
  const std::vector<std::string>& errors = shared->errors;
  double last_finish = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    RequestOutcome& r = out.run.requests[i];
    if (!errors[i].empty()) {
      r.rejected = true;
      ++out.failed;
      if (out.failures.size() < 5) out.failures.push_back(errors[i]);
    }
    last_finish = std::max(last_finish, r.finish_s);
    out.run.prompt_tokens += r.prompt_tokens;
  }
  out.run.makespan_s = last_finish;
  return out;
}

}  // namespace inferlab::server
