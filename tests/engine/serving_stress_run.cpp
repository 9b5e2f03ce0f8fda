// The batched run of a stress case: serve's scheduler and the engine's ServingExecutor on a
// virtual clock (one millisecond per iteration, so that a seed gives the same batches on any
// machine), driven as `serve` drives them (drawn prompts, requests known up front) or as the
// server's engine loop does (src/server/engine_loop.cpp: requests added as they arrive with their
// prompt ids, sampling and seed, ended early at a stop, let go of once done).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <stdexcept>

#include "engine/serving_executor.hpp"
#include "engine/serving_stress_support.hpp"
#include "serve/block_keys.hpp"
#include "serve/scheduler.hpp"

namespace inferlab::engine::stress {

namespace {

constexpr double kIterationS = 1e-3;

std::string state_of(const Scheduler& s) {
  return fmt::format("{} running, {} waiting or swapped, {} of {} KV blocks in use",
                     s.running_count(), s.waiting_count(), s.blocks().used_blocks(),
                     s.blocks().total_blocks());
}

// The longest request that will run, as serve sizes the backend's batches by it.
int64_t longest_request(const StressCase& c) {
  int64_t longest = 1;
  for (const StressRequest& q : c.requests) {
    if (!exceeds_max_model_len(q.request, c.config)) {
      longest = std::max(longest, q.request.prompt_tokens + q.request.output_tokens);
    }
  }
  return longest;
}

// One run's scheduler, executor and bookkeeping.
class Driver {
 public:
  Driver(const StressCase& c, BackendProvider& backends, BatchedRun& run)
      : c_(c), run_(run), n_(c.requests.size()) {
    BackendSpec spec{ModelRole::target,
                     c.quant,
                     c.config.block_size,
                     c.config.kv_blocks,
                     max_iteration_tokens(c.config, longest_request(c)),
                     c.config.max_num_seqs,
                     c.cuda_graphs};
    Backend& target = backends.get(spec);
    for (const StressRequest& q : c.requests) lengths_.push_back(q.request);
    if (c.online) {
      scheduler_ = std::make_unique<Scheduler>(std::vector<ServeRequest>{}, c.config);
      executor_ = std::make_unique<ServingExecutor>(target);
    } else {
      scheduler_ = std::make_unique<Scheduler>(lengths_, c.config);
      executor_ = std::make_unique<ServingExecutor>(target, lengths_, c.seed);
    }
    if (c.drafting != Drafting::none && c.drafting != Drafting::ngram) {
      // The draft's pool has the target's blocks, as the CLI gives it (engine_args.cpp).
      spec.role = draft_role(c.drafting);
      spec.kv_blocks = target.kv_layout().num_blocks;
      executor_->set_draft_model(backends.get(spec));
    }
    order_.resize(n_);
    std::iota(order_.begin(), order_.end(), size_t{0});
    std::stable_sort(order_.begin(), order_.end(), [&](size_t a, size_t b) {
      return c.requests[a].request.arrival_s < c.requests[b].request.arrival_s;
    });
  }

  void run(int64_t limit) {
    double now = 0.0;
    while (true) {
      arrive(now);
      ScheduledIteration iteration = scheduler_->schedule();
      if (iteration.idle()) {
        collect(now);  // requests the scheduler turned away
        const double next = next_arrival_s();
        if (next >= 0.0) {
          now = std::max(now, next);
          continue;
        }
        if (scheduler_->finished()) break;
        throw std::logic_error("stalled: nothing to run and nothing to come with " +
                               state_of(*scheduler_));
      }
      if (run_.iterations >= limit) {
        throw std::runtime_error(fmt::format(
            "no end after {} iterations (the bound for this case; a hang or a livelock): {}", limit,
            state_of(*scheduler_)));
      }
      const IterationOutcome outcome = executor_->execute(iteration);
      ++run_.iterations;
      now += kIterationS;
      scheduler_->update(iteration, outcome, now);
      const std::string broken = scheduler_->blocks().consistency_error();
      if (!broken.empty()) {
        throw std::logic_error(
            fmt::format("the block manager after iteration {}: {}", run_.iterations, broken));
      }
      collect(now);
    }
    finish();
  }

 private:
  void arrive(double now) {
    if (!c_.online) {
      scheduler_->arrive(now);
      return;
    }
    // As the server admits a request: its real prompt, prefix-cache keys from its ids.
    while (next_ < n_ && c_.requests[order_[next_]].request.arrival_s <= now) {
      const size_t index = order_[next_++];
      const StressRequest& q = c_.requests[index];
      ServeRequest request;
      request.prompt_tokens = static_cast<int64_t>(q.prompt.size());
      request.output_tokens = q.request.output_tokens;
      if (c_.config.prefix_caching) {
        request.block_keys = token_block_keys(q.prompt, c_.config.block_size);
      }
      const int64_t id = scheduler_->add(std::move(request), now);
      executor_->add_request(id, q.prompt, q.sampling, q.seed);
      active_[id] = index;
      run_.prompts[index] = q.prompt;
    }
  }

  double next_arrival_s() const {
    if (c_.online) return next_ < n_ ? c_.requests[order_[next_]].request.arrival_s : -1.0;
    return scheduler_->has_pending_arrivals() ? scheduler_->next_arrival_s() : -1.0;
  }

  // The server path's after-iteration step (engine_loop's after_iteration and end): requests
  // turned away, stopped, cancelled or finished leave the scheduler and the executor, their
  // tokens kept.
  void collect(double now) {
    if (!c_.online) return;
    for (auto it = active_.begin(); it != active_.end();) {
      const auto [id, index] = *it;
      const StressRequest& q = c_.requests[index];
      const auto& generated = executor_->generated(static_cast<size_t>(id));
      const auto stop = static_cast<size_t>(q.stop_after);
      const bool stopped =
          stop > 0 && generated.size() >= stop && !scheduler_->outcome(id).rejected;
      const bool gone = q.cancel_after_s > 0 && now >= q.request.arrival_s + q.cancel_after_s;
      if (!stopped && !gone && !scheduler_->is_finished(id)) {
        ++it;
        continue;
      }
      scheduler_->end_early(id, now);  // no effect on a finished one
      run_.tokens[index] = generated;
      if (stopped) run_.tokens[index].resize(stop);
      run_.outcomes[index] = scheduler_->outcome(id);
      scheduler_->forget(id);
      executor_->release(id);
      it = active_.erase(it);
    }
  }

  void finish() {
    const ServeResult& totals = scheduler_->result_so_far();
    run_.preemptions = totals.preemptions;
    run_.prefix_hit_tokens = totals.prefix_hit_tokens;
    run_.drafts_proposed = totals.draft_tokens_proposed;
    run_.drafts_accepted = totals.draft_tokens_accepted;
    run_.pool_blocks = scheduler_->blocks().total_blocks();
    run_.free_blocks_after = scheduler_->blocks().free_blocks();
    if (c_.online) {
      if (!active_.empty() || scheduler_->held_requests() != 0) {
        throw std::logic_error(
            fmt::format("{} requests still active and {} held by the scheduler after the run",
                        active_.size(), scheduler_->held_requests()));
      }
      return;
    }
    for (size_t i = 0; i < n_; ++i) {
      run_.prompts[i] = executor_->prompt(i);
      run_.tokens[i] = executor_->generated(i);
      run_.outcomes[i] = scheduler_->outcome(static_cast<int64_t>(i));
    }
  }

  const StressCase& c_;
  BatchedRun& run_;
  size_t n_;
  std::vector<ServeRequest> lengths_;  // the serve path's requests (the scheduler points in)
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<ServingExecutor> executor_;
  std::vector<size_t> order_;         // requests by arrival
  size_t next_ = 0;                   // server path: the next to arrive
  std::map<int64_t, size_t> active_;  // server path: scheduler id → request
};

}  // namespace

int64_t iteration_bound(const StressCase& c) {
  // A correct run computes each request's prompt and output once, plus what preemption by
  // recompute makes it compute again; at least one token per iteration, mostly far more. Four
  // times every token, one at a time, leaves room for heavy preemption and none for a livelock.
  int64_t tokens = 0;
  for (const StressRequest& q : c.requests) {
    tokens += q.request.prompt_tokens + q.request.output_tokens;
  }
  return 4 * tokens + 100 * static_cast<int64_t>(c.requests.size()) + 1000;
}

BatchedRun run_case(const StressCase& c, BackendProvider& backends, int64_t iteration_limit) {
  BatchedRun run;
  run.prompts.resize(c.requests.size());
  run.tokens.resize(c.requests.size());
  run.outcomes.resize(c.requests.size());
  try {
    Driver driver(c, backends, run);
    driver.run(iteration_limit > 0 ? iteration_limit : iteration_bound(c));
  } catch (const std::exception& e) {
    run.failure = fmt::format("after {} iterations: {}", run.iterations, e.what());
  }
  return run;
}

}  // namespace inferlab::engine::stress
