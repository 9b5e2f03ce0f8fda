#include "server/engine_loop.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "serve/block_keys.hpp"
#include "server/api_error.hpp"
#include "server/engine_failure.hpp"

namespace inferlab::server {

namespace {
const std::vector<ServeRequest> kNoRequests;

SchedulerConfig with_pool(SchedulerConfig config, const engine::Backend& backend) {
  config.kv_blocks = backend.kv_layout().num_blocks;
  config.block_size = backend.kv_layout().block_size;
  return config;
}
}  // namespace

EngineLoop::EngineLoop(engine::Backend& backend, LoopOptions options, ServingMetrics& metrics)
    : backend_(backend),
      options_(std::move(options)),
      metrics_(metrics),
      start_(std::chrono::steady_clock::now()),
      kv_slots_(backend.kv_layout().slots()),
      scheduler_(kNoRequests, with_pool(options_.config, backend)),
      executor_(backend) {
  options_.config = with_pool(options_.config, backend);
  if (options_.draft != nullptr) executor_.set_draft_model(*options_.draft);
  publish_gauges();
  thread_ = std::thread([this] { run(); });
}

EngineLoop::~EngineLoop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

double EngineLoop::now_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::shared_ptr<RequestStream> EngineLoop::submit(GenerationJob job) {
  std::vector<GenerationJob> jobs;
  jobs.push_back(std::move(job));
  return submit_all(std::move(jobs)).front();
}

std::vector<std::shared_ptr<RequestStream>> EngineLoop::submit_all(
    std::vector<GenerationJob> jobs) {
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (size_t i = 0; i < jobs.size(); ++i)
    streams.push_back(std::make_shared<RequestStream>(now_s()));
  const auto count = static_cast<int64_t>(jobs.size());
  const int64_t limit = options_.config.max_num_seqs + options_.max_waiting;
  {
    std::lock_guard lock(mutex_);
    if (!fatal_error_.empty()) throw ApiError(503, "the engine failed; see the server's log");
    if (draining_ || stopping_) throw ApiError(503, "the server is shutting down");
    if (count > limit) {
      throw ApiError(400,
                     fmt::format("the request asks for {} sequences (prompts x n); this server "
                                 "runs and queues at most {} at once",
                                 count, limit),
                     "n");
    }
    const int64_t in_flight = accepted_ - finished_;
    if (in_flight + count > limit) {
      throw ApiError(429, "the server's queue is full; retry later");
    }
    accepted_ += count;
    for (size_t i = 0; i < jobs.size(); ++i) incoming_.push_back({std::move(jobs[i]), streams[i]});
  }
  wake_.notify_all();
  return streams;
}

int64_t EngineLoop::in_flight() const {
  std::lock_guard lock(mutex_);
  return accepted_ - finished_;
}

std::string EngineLoop::fatal_error() const {
  std::lock_guard lock(mutex_);
  return fatal_error_;
}

void EngineLoop::notify_cancel() {
  wake_.notify_all();
}

void EngineLoop::drain() {
  std::unique_lock lock(mutex_);
  draining_ = true;
  drained_.wait(lock, [&] { return finished_ == accepted_; });
}

void EngineLoop::admit(std::vector<Incoming>& incoming) {
  for (auto& in : incoming) {
    ServeRequest request;
    request.prompt_tokens = static_cast<int64_t>(in.job.prompt.size());
    request.output_tokens = in.job.max_tokens;
    // A prompt whose tokens are scored runs from position 0: no keys, so it neither finds nor
    // leaves blocks in the prefix cache (as vLLM skips the cache for prompt logprobs).
    if (options_.config.prefix_caching && !in.job.logprobs.prompt) {
      request.block_keys = token_block_keys(in.job.prompt, options_.config.block_size);
    }
    const int64_t id = scheduler_.add(std::move(request), in.stream->submitted_s());
    executor_.add_request(id, in.job.prompt, in.job.sampling, in.job.seed, in.job.logprobs);
    active_.emplace(id, Active{std::move(in.stream), std::move(in.job), 0, false});
  }
  incoming.clear();
}

void EngineLoop::end(int64_t id, Active& active, const std::string& reason,
                     int64_t completion_tokens, const std::string& error) {
  const double now = now_s();
  scheduler_.end_early(id, now);  // no effect when the scheduler finished it already
  const RequestOutcome& outcome = scheduler_.outcome(id);
  const double ttft = outcome.first_token_s >= 0 ? outcome.first_token_s - outcome.arrival_s : -1;
  const double tpot =
      completion_tokens > 1 && outcome.first_token_s >= 0
          ? (now - outcome.first_token_s) / static_cast<double>(completion_tokens - 1)
          : 0.0;
  metrics_.record_finish(reason, outcome.prompt_tokens, completion_tokens, ttft, tpot,
                         now - outcome.arrival_s);
  active.stream->finish(reason, completion_tokens, now, error);
  scheduler_.forget(id);
  executor_.release(id);
}

// Streams what the iteration produced and ends the sequences that are done.
void EngineLoop::after_iteration() {
  std::vector<int64_t> ended;
  for (auto& [id, active] : active_) {
    if (active.stream->cancelled()) {
      end(id, active, "abort", static_cast<int64_t>(active.streamed));
      ended.push_back(id);
      continue;
    }
    const RequestOutcome& outcome = scheduler_.outcome(id);
    if (outcome.rejected) {
      end(id, active, "error", 0,
          outcome.past_max_model_len ? "the prompt and max_tokens pass the maximum model length"
                                     : "the prompt and max_tokens do not fit in the KV cache");
      ended.push_back(id);
      continue;
    }
    const auto request = static_cast<size_t>(id);
    if (active.job.logprobs.prompt && !active.prompt_scored) {
      if (const auto* scored = executor_.prompt_logprobs(request)) {
        active.stream->push_prompt_logprobs(*scored);  // before the first token
        active.prompt_scored = true;
      }
    }
    const auto& generated = executor_.generated(request);
    const auto& logprobs = executor_.generated_logprobs(request);
    // The scheduler counts at most max_tokens; speculation may have produced more.
    const size_t available = std::min(generated.size(), static_cast<size_t>(active.job.max_tokens));
    std::vector<int32_t> fresh;
    std::vector<engine::PositionLogprobs> fresh_logprobs;
    bool stopped = false;
    while (active.streamed < available) {
      const size_t index = active.streamed++;
      const int32_t token = generated[index];
      const bool stop_token = static_cast<int64_t>(active.streamed) > active.job.min_tokens &&
                              std::find(active.job.stop_ids.begin(), active.job.stop_ids.end(),
                                        token) != active.job.stop_ids.end();
      if (stop_token) {
        stopped = true;
        break;
      }
      fresh.push_back(token);
      if (index < logprobs.size()) fresh_logprobs.push_back(logprobs[index]);
    }
    active.stream->push(fresh, now_s(), fresh_logprobs);
    if (stopped) {
      end(id, active, "stop", static_cast<int64_t>(active.streamed));
      ended.push_back(id);
    } else if (active.streamed >= static_cast<size_t>(active.job.max_tokens)) {
      end(id, active, "length", static_cast<int64_t>(active.streamed));
      ended.push_back(id);
    }
  }
  for (int64_t id : ended) active_.erase(id);
  count_finished(static_cast<int64_t>(ended.size()));
}

void EngineLoop::count_finished(int64_t requests) {
  if (requests == 0) return;
  {
    std::lock_guard lock(mutex_);
    finished_ += requests;
  }
  drained_.notify_all();
}

int64_t EngineLoop::fail_iteration(const ScheduledIteration& iteration, const std::string& error) {
  std::set<int64_t> ids;  // a sequence both swapped in and run is one request
  for (const Work& w : iteration.work) ids.insert(w.seq->id);
  // A sequence whose swap the failed iteration was carrying has its KV half moved: it goes too.
  for (const KvSwap& swap : iteration.swaps) ids.insert(swap.seq);
  int64_t ended = 0;
  for (int64_t id : ids) {
    const auto it = active_.find(id);
    if (it == active_.end()) continue;
    // end() gives the blocks back through the scheduler's early end, as for a cancel.
    end(id, it->second, "error", static_cast<int64_t>(it->second.streamed), error);
    active_.erase(it);
    ++ended;
  }
  count_finished(ended);
  return ended;
}

void EngineLoop::fail_all(const std::string& error, std::vector<Incoming>& pending) {
  {
    std::lock_guard lock(mutex_);
    fatal_error_ = error;
    pending.insert(pending.end(), std::make_move_iterator(incoming_.begin()),
                   std::make_move_iterator(incoming_.end()));
    incoming_.clear();
  }
  const double now = now_s();
  int64_t ended = 0;
  const auto finish = [&](RequestStream& stream, int64_t prompt_tokens, int64_t streamed) {
    metrics_.record_finish("error", prompt_tokens, streamed, -1, 0.0, now - stream.submitted_s());
    stream.finish("error", streamed, now, error);
    ++ended;
  };
  for (auto& [id, active] : active_) {
    finish(*active.stream, static_cast<int64_t>(active.job.prompt.size()),
           static_cast<int64_t>(active.streamed));
  }
  active_.clear();
  for (auto& in : pending) {
    if (in.stream) finish(*in.stream, static_cast<int64_t>(in.job.prompt.size()), 0);
  }
  pending.clear();  // an admitted one's stream moved to active_ (null here)
  count_finished(ended);
}

void EngineLoop::publish_gauges() {
  const ServeResult& totals = scheduler_.result_so_far();
  LoopGauges g;
  g.running = scheduler_.running_count();
  g.waiting = scheduler_.waiting_count();
  g.kv_blocks_used = scheduler_.blocks().used_blocks();
  g.kv_blocks_total = scheduler_.blocks().total_blocks();
  g.prefix_hit_tokens = totals.prefix_hit_tokens;
  g.prompt_tokens_admitted = totals.prompt_tokens;
  g.preemptions = totals.preemptions;
  g.iterations = iterations_;
  g.draft_tokens = totals.draft_tokens_proposed;
  g.accepted_draft_tokens = totals.draft_tokens_accepted;
  metrics_.set_gauges(g);
}

bool EngineLoop::stopping_unlocked() {
  std::lock_guard lock(mutex_);
  return stopping_;
}

void EngineLoop::run() {
  std::vector<Incoming> incoming;
  while (true) {
    {
      std::unique_lock lock(mutex_);
      // Idle: sleep until a request comes. Busy: go on at once.
      wake_.wait(lock, [&] { return stopping_ || !incoming_.empty() || !active_.empty(); });
      if (stopping_ && incoming_.empty() && active_.empty()) break;
      incoming.swap(incoming_);
    }
    try {
      iterate(incoming);
    } catch (const std::exception& e) {
      // Outside the engine's call (the scheduler, the loop's bookkeeping): nothing says the
      // state is whole, so nothing more runs.
      const std::string error = std::string("the serving loop failed: ") + e.what();
      if (options_.warn) options_.warn(error + "; the server stops");
      fail_all(error, incoming);
    }
  }
}

void EngineLoop::iterate(std::vector<Incoming>& incoming) {
  if (stopping_unlocked()) {  // the server is going away: nothing waits for these any more
    for (auto& in : incoming) in.stream->cancel();
    for (auto& [id, active] : active_) active.stream->cancel();
  }
  admit(incoming);
  after_iteration();  // cancellations that came in between iterations
  if (active_.empty()) {
    publish_gauges();
    return;
  }
  ScheduledIteration iteration = scheduler_.schedule();
  if (iteration.idle()) {
    after_iteration();  // requests the scheduler rejected
    publish_gauges();
    std::unique_lock lock(mutex_);
    wake_.wait_for(lock, std::chrono::milliseconds(1));
    return;
  }
  IterationOutcome outcome;
  try {
    outcome = executor_.execute(iteration);
  } catch (const std::exception& e) {
    const bool fatal =
        is_fatal_engine_error(e) || ++failed_in_a_row_ >= kMaxConsecutiveFailedIterations;
    const std::string error = std::string("the engine failed: ") + e.what();
    if (fatal) {
      if (options_.warn) options_.warn(error + "; the engine is unusable and the server stops");
      fail_all(error, incoming);
    } else {
      const int64_t ended = fail_iteration(iteration, error);
      if (options_.warn) {
        options_.warn(
            fmt::format("{}; the iteration's {} request(s) ended with an error, the "
                        "server goes on",
                        error, ended));
      }
    }
    publish_gauges();
    return;
  }
  failed_in_a_row_ = 0;
  scheduler_.update(iteration, outcome, now_s());
  ++iterations_;
  after_iteration();
  publish_gauges();
}

}  // namespace inferlab::server
