#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/backend.hpp"
#include "engine/logprobs.hpp"
#include "engine/sampling.hpp"
#include "engine/serving_executor.hpp"
#include "serve/scheduler.hpp"
#include "serve/serving_loop.hpp"
#include "server/request_stream.hpp"
#include "server/serving_metrics.hpp"

namespace inferlab::server {

// What one request asks the engine for, in tokens.
struct GenerationJob {
  std::vector<int32_t> prompt;
  int64_t max_tokens = 16;
  int64_t min_tokens = 0;         // stop tokens do not count before this many tokens
  std::vector<int32_t> stop_ids;  // tokens that end it (EOS unless ignore_eos, and the
                                  // request's stop_token_ids); the stop token is not streamed
  engine::SamplingParams sampling;
  uint64_t seed = 0;
  // Logprobs of the generated tokens and/or the prompt's (then the prompt skips the prefix
  // cache: a cached prefix has no logits).
  engine::LogprobRequest logprobs;
};

struct LoopOptions {
  SchedulerConfig config;      // scheduling policy, limits, prefix caching, speculative k
  int64_t max_waiting = 1024;  // requests queued beyond the running ones; more: 429
  // Speculative decoding's draft model (config.speculative.k drafts per step), kept by the
  // caller; null: n-gram lookup.
  engine::Backend* draft = nullptr;
  // Where the loop says that an iteration failed (a line without a newline; the CLI prints it
  // on stderr); null: nowhere.
  std::function<void(const std::string&)> warn;
};

// The server's serving loop on its own thread: serve's one scheduler (schedule → execute →
// update, DESIGN) with the engine's executor, on the wall clock, taking requests as they come.
// submit() is called from the HTTP threads; the loop streams each request's tokens to its
// RequestStream, applies stop tokens, and ends a sequence whose stream was cancelled (its blocks
// go back before the next iteration).
//
// An iteration that throws ends the requests it ran with finish reason "error" (the server
// answers them 500) and gives their blocks back; the loop goes on with the others. A fatal
// failure (server/engine_failure.hpp), or one outside the engine's call (the scheduler's
// bookkeeping), ends every request and the loop refuses new ones: fatal_error() says why.
class EngineLoop {
 public:
  EngineLoop(engine::Backend& backend, LoopOptions options, ServingMetrics& metrics);
  ~EngineLoop();
  EngineLoop(const EngineLoop&) = delete;
  EngineLoop& operator=(const EngineLoop&) = delete;

  // Queues a job; ApiError 429 when the queue is full, 503 while draining or after a failure.
  std::shared_ptr<RequestStream> submit(GenerationJob job);
  // Queues every job or none (the choices of one request): as submit(), and ApiError 400 when
  // there are more than the queue could ever hold.
  std::vector<std::shared_ptr<RequestStream>> submit_all(std::vector<GenerationJob> jobs);
  // Wakes the loop so it sees a cancelled stream at once.
  void notify_cancel();
  // Stops taking new requests and returns once every accepted one has finished.
  void drain();
  // Seconds on the loop's clock (steady, from construction).
  double now_s() const;
  int64_t kv_slots() const { return kv_slots_; }
  // Requests accepted and not yet finished.
  int64_t in_flight() const;
  // Why the loop stopped serving after a fatal failure; empty while it serves.
  std::string fatal_error() const;

 private:
  struct Incoming {
    GenerationJob job;
    std::shared_ptr<RequestStream> stream;
  };
  struct Active {
    std::shared_ptr<RequestStream> stream;
    GenerationJob job;
    size_t streamed = 0;         // tokens handed to the stream
    bool prompt_scored = false;  // its prompt logprobs handed to the stream
  };
  void run();
  // One round: admits what came in, runs one iteration if there is work.
  void iterate(std::vector<Incoming>& incoming);
  void admit(std::vector<Incoming>& incoming);
  void end(int64_t id, Active& active, const std::string& reason, int64_t completion_tokens,
           const std::string& error = "");
  void after_iteration();
  // Ends the requests an iteration that threw was running (its work and its swaps); their
  // blocks go back. Returns how many.
  int64_t fail_iteration(const ScheduledIteration& iteration, const std::string& error);
  // Ends every request, `pending` (taken from incoming_, maybe partly admitted) and those still
  // in incoming_ too, without the scheduler (whose state may be what failed); refuses new ones.
  void fail_all(const std::string& error, std::vector<Incoming>& pending);
  void count_finished(int64_t requests);
  void publish_gauges();
  bool stopping_unlocked();  // reads stopping_ under the lock

  engine::Backend& backend_;
  LoopOptions options_;
  ServingMetrics& metrics_;
  const std::chrono::steady_clock::time_point start_;
  int64_t kv_slots_ = 0;
  Scheduler scheduler_;
  engine::ServingExecutor executor_;
  std::unordered_map<int64_t, Active> active_;  // loop thread only
  int64_t iterations_ = 0;
  int failed_in_a_row_ = 0;  // iterations that threw since the last that ran

  mutable std::mutex mutex_;
  std::condition_variable wake_, drained_;
  std::vector<Incoming> incoming_;
  int64_t accepted_ = 0, finished_ = 0;  // under mutex_
  bool draining_ = false, stopping_ = false;
  std::string fatal_error_;  // under mutex_; set once
  std::thread thread_;
};

}  // namespace inferlab::server
