#include "serve/engine.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <numeric>
#include <random>

#include "serve/block_manager.hpp"
#include "util/enum_names.hpp"
#include "util/error.hpp"

namespace inferlab {

namespace {

enum class SeqState { pending, waiting, running, swapped, finished };

struct Seq {
  const ServeRequest* request = nullptr;
  int64_t id = 0;
  int64_t computed = 0;   // tokens whose KV is in the cache
  int64_t target = 0;     // tokens to prefill before the next sample: the prompt, or after a
                          // recompute preemption the prompt and the tokens generated so far
  int64_t generated = 0;  // tokens emitted
  double last_emit_s = 0.0;
  SeqState state = SeqState::pending;
  int64_t shared_prefix_tokens() const {
    return request->prefix_id >= 0 ? request->prefix_tokens : 0;
  }
  bool decoding() const { return computed >= target && generated > 0; }
};

struct Work {
  Seq* seq;
  int64_t new_tokens;
  bool decode;
};

class Engine {
 public:
  Engine(const std::vector<ServeRequest>& requests, const EngineConfig& config,
         const IterationCost& cost)
      : config_(config),
        cost_(cost),
        blocks_(config.kv_blocks, config.block_size,
                config.prefix_caching && config.policy != SchedulePolicy::orca &&
                    config.policy != SchedulePolicy::static_batch),
        rng_(config.seed) {
    seqs_.resize(requests.size());
    result_.requests.resize(requests.size());
    for (size_t i = 0; i < requests.size(); ++i) {
      seqs_[i].request = &requests[i];
      seqs_[i].id = static_cast<int64_t>(i);
      seqs_[i].target = requests[i].prompt_tokens;
      auto& out = result_.requests[i];
      out.arrival_s = requests[i].arrival_s;
      out.prompt_tokens = requests[i].prompt_tokens;
      out.output_tokens = requests[i].output_tokens;
      arrivals_.push_back(&seqs_[i]);
    }
    std::stable_sort(arrivals_.begin(), arrivals_.end(), [](const Seq* a, const Seq* b) {
      return a->request->arrival_s < b->request->arrival_s;
    });
    result_.kv_blocks = config.kv_blocks;
  }

  ServeResult run() {
    size_t next_arrival = 0;
    double now = arrivals_.empty() ? 0.0 : arrivals_.front()->request->arrival_s;
    const double first_arrival = now;
    size_t done = 0;
    while (done < seqs_.size()) {
      while (next_arrival < arrivals_.size() &&
             arrivals_[next_arrival]->request->arrival_s <= now) {
        Seq* s = arrivals_[next_arrival++];
        s->state = SeqState::waiting;
        waiting_.push_back(s);
      }
      iteration_preemptions_ = 0;
      swap_bytes_ = 0.0;
      std::vector<Work> work = schedule(done);
      if (work.empty() && swap_bytes_ == 0.0) {
        if (next_arrival < arrivals_.size()) {
          now = std::max(now, arrivals_[next_arrival]->request->arrival_s);
          continue;
        }
        if (done < seqs_.size()) throw std::logic_error("serving engine stalled");
        break;
      }
      IterationBatch batch = to_batch(work);
      const double duration = cost_.time_s(batch);
      IterationRecord record;
      record.start_s = now;
      record.duration_s = duration;
      record.kv_blocks_used = blocks_.used_blocks();
      record.preemptions = iteration_preemptions_;
      record.batch_seqs = static_cast<int64_t>(work.size());
      now += duration;
      apply(work, now, done, record);
      record.running = static_cast<int64_t>(running_.size());
      record.waiting = static_cast<int64_t>(waiting_.size() + swapped_.size());
      result_.iterations.push_back(record);
    }
    double last_finish = first_arrival;
    for (const auto& r : result_.requests) last_finish = std::max(last_finish, r.finish_s);
    result_.makespan_s = last_finish - first_arrival;
    return std::move(result_);
  }

 private:
  bool paged() const {
    return config_.policy == SchedulePolicy::vllm || config_.policy == SchedulePolicy::chunked;
  }
  // Tokens one decode step computes for `s`: 1, or k + 1 under speculation, never more than
  // it still has to emit.
  int64_t decode_tokens(const Seq* s) const {
    const int64_t remaining = s->request->output_tokens - s->generated;
    return std::min<int64_t>(1 + config_.speculative.k, std::max<int64_t>(remaining, 1));
  }

  // A request that cannot fit even in an empty cache is turned away.
  bool reject_if_impossible(Seq* s, size_t& done) {
    const int64_t need =
        paged() ? s->target + 1 : s->request->prompt_tokens + s->request->output_tokens;
    if (blocks_.blocks_for(need) <= blocks_.total_blocks()) return false;
    s->state = SeqState::finished;
    result_.requests[static_cast<size_t>(s->id)].rejected = true;
    ++done;
    return true;
  }

  // Evicts the most recently admitted running sequence: one scheduled after the sequence that
  // needs blocks, or that sequence itself when it is the last (as vLLM does). Returns it.
  Seq* preempt() {
    Seq* victim = running_.back();
    running_.pop_back();
    ++iteration_preemptions_;
    ++result_.preemptions;
    ++result_.requests[static_cast<size_t>(victim->id)].preemptions;
    if (config_.preemption == PreemptionMode::swap) {
      swap_bytes_ += static_cast<double>(blocks_.held_blocks(victim->id)) * config_.kv_block_bytes;
      swapped_.push_back(victim);
      victim->state = SeqState::swapped;
      blocks_.release(victim->id);
    } else {
      blocks_.release(victim->id);
      victim->computed = 0;
      victim->target = victim->request->prompt_tokens + victim->generated;
      victim->state = SeqState::waiting;
      waiting_.push_front(victim);
    }
    return victim;
  }

  // Grows `s` to `tokens`, preempting later sequences while blocks are short. False when `s`
  // itself had to go.
  bool grow_or_preempt(Seq* s, int64_t tokens) {
    while (!blocks_.grow(s->id, tokens)) {
      if (preempt() == s) return false;
    }
    return true;
  }

  // Admits a waiting sequence: takes its cached prefix blocks and reserves what it needs.
  bool admit(Seq* s, int64_t chunk_limit, int64_t& new_tokens) {
    const auto& r = *s->request;
    int64_t hit_tokens = 0;
    if (s->computed == 0 && paged()) {
      const int64_t prefix_full_blocks =
          r.prefix_id >= 0 ? r.prefix_tokens / config_.block_size : 0;
      // At least one prompt token is always computed (its logits give the first token).
      const int64_t usable = std::min(prefix_full_blocks, (s->target - 1) / config_.block_size);
      const int64_t hits = blocks_.cached_prefix_blocks(r.prefix_id, usable);
      const int64_t uncached = s->target - hits * config_.block_size;
      const int64_t chunk = std::min(uncached, chunk_limit);
      if (chunk < 1) return false;
      if (blocks_.blocks_for(s->target - uncached + chunk) - hits > blocks_.free_blocks()) {
        return false;
      }
      blocks_.acquire_prefix(s->id, r.prefix_id, hits);
      if (!blocks_.grow(s->id, hits * config_.block_size + chunk)) {
        blocks_.release(s->id);  // the cached blocks it took were the ones it needed to grow
        return false;
      }
      hit_tokens = hits * config_.block_size;
      s->computed = hit_tokens;
      new_tokens = chunk;
    } else if (paged()) {
      const int64_t chunk = std::min(s->target - s->computed, chunk_limit);
      if (chunk < 1 || !blocks_.grow(s->id, s->computed + chunk)) return false;
      new_tokens = chunk;
    } else {
      // Reserved for the whole request up front.
      if (!blocks_.grow(s->id, r.prompt_tokens + r.output_tokens)) return false;
      new_tokens = s->target - s->computed;
    }
    if (s->generated == 0) {
      auto& out = result_.requests[static_cast<size_t>(s->id)];
      out.prefix_hit_tokens = hit_tokens;
      result_.prefix_hit_tokens += hit_tokens;
      result_.prompt_tokens += r.prompt_tokens;
    }
    s->state = SeqState::running;
    running_.push_back(s);
    return true;
  }

  // Admits waiting sequences in arrival order (no overtaking) while sequence slots and the
  // token budget last. Whole prompts, or with `chunks` a first chunk that fills what the budget
  // leaves. A whole prompt may exceed the budget when it is the iteration's first work (vLLM
  // raises its budget to the longest prompt).
  void admit_waiting(size_t& done, std::vector<Work>& work, int64_t& budget, bool chunks) {
    while (!waiting_.empty() && static_cast<int64_t>(running_.size()) < config_.max_num_seqs &&
           (!chunks || (budget > 0 && swapped_.empty()))) {
      Seq* s = waiting_.front();
      if (reject_if_impossible(s, done)) {
        waiting_.pop_front();
        continue;
      }
      const int64_t remaining = s->target - s->computed;
      if (!chunks && !work.empty() && remaining > budget) break;
      int64_t tokens = 0;
      if (!admit(s, chunks ? budget : remaining, tokens)) break;
      waiting_.pop_front();
      work.push_back({s, tokens, false});
      budget -= tokens;
    }
  }

  std::vector<Work> schedule(size_t& done) {
    switch (config_.policy) {
      case SchedulePolicy::vllm:
        return schedule_vllm(done);
      case SchedulePolicy::chunked:
        return schedule_chunked(done);
      case SchedulePolicy::orca:
        return schedule_orca(done);
      case SchedulePolicy::static_batch:
        return schedule_static(done);
    }
    return {};
  }

  std::vector<Work> schedule_vllm(size_t& done) {
    std::vector<Work> work;
    if (swapped_.empty()) {
      int64_t budget = config_.max_num_batched_tokens;
      admit_waiting(done, work, budget, false);
      if (!work.empty()) return work;
    }
    schedule_decodes(work);
    if (iteration_preemptions_ == 0) swap_in();
    return work;
  }

  // One decode step (k + 1 tokens under speculation) for every running sequence, oldest
  // first, preempting the newest while blocks run short.
  void schedule_decodes(std::vector<Work>& work) {
    for (size_t i = 0; i < running_.size(); ++i) {
      Seq* s = running_[i];
      if (!s->decoding()) continue;
      const int64_t step = decode_tokens(s);
      if (!grow_or_preempt(s, s->computed + step)) break;  // s itself was the last
      work.push_back({s, step, true});
    }
    // Preemption may have removed sequences already given work: keep only running ones.
    std::erase_if(work, [](const Work& w) { return w.seq->state != SeqState::running; });
  }

  void swap_in() {
    while (!swapped_.empty()) {
      Seq* s = swapped_.front();
      if (!blocks_.grow(s->id, s->computed)) break;
      swap_bytes_ += static_cast<double>(blocks_.held_blocks(s->id)) * config_.kv_block_bytes;
      swapped_.pop_front();
      s->state = SeqState::running;
      running_.push_back(s);
    }
  }

  std::vector<Work> schedule_chunked(size_t& done) {
    std::vector<Work> work;
    schedule_decodes(work);
    int64_t budget = config_.max_num_batched_tokens;
    for (const auto& w : work) budget -= w.new_tokens;
    // Prompts already under way continue.
    for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
      Seq* s = running_[i];
      if (s->computed >= s->target) continue;
      const int64_t chunk = std::min(s->target - s->computed, budget);
      if (!grow_or_preempt(s, s->computed + chunk)) break;
      work.push_back({s, chunk, false});
      budget -= chunk;
    }
    std::erase_if(work, [](const Work& w) { return w.seq->state != SeqState::running; });
    if (iteration_preemptions_ > 0) return work;
    if (config_.preemption == PreemptionMode::swap) swap_in();
    admit_waiting(done, work, budget, true);
    return work;
  }

  std::vector<Work> schedule_orca(size_t& done) {
    std::vector<Work> work;
    int64_t budget = config_.max_num_batched_tokens;
    for (Seq* s : running_) {
      work.push_back({s, decode_tokens(s), true});
      budget -= work.back().new_tokens;
    }
    admit_waiting(done, work, budget, false);
    return work;
  }

  std::vector<Work> schedule_static(size_t& done) {
    std::vector<Work> work;
    const bool batch_running = std::any_of(running_.begin(), running_.end(), [](const Seq* s) {
      return s->state == SeqState::running;
    });
    if (!batch_running) {
      for (Seq* s : running_) blocks_.release(s->id);  // the finished batch gives its memory back
      running_.clear();
      int64_t unlimited = std::numeric_limits<int64_t>::max();  // a batch takes every prompt whole
      admit_waiting(done, work, unlimited, false);
      return work;
    }
    for (Seq* s : running_) {
      if (s->state != SeqState::running) continue;
      work.push_back({s, decode_tokens(s), true});
    }
    return work;
  }

  IterationBatch to_batch(const std::vector<Work>& work) const {
    IterationBatch batch;
    batch.swap_bytes = swap_bytes_;
    int64_t draft_context_sum = 0;
    for (const auto& w : work) {
      ScheduledSeq s;
      s.new_tokens = w.new_tokens;
      s.context = w.seq->computed + w.new_tokens;
      s.samples = w.decode || w.seq->computed + w.new_tokens >= w.seq->target;
      s.decode = w.decode;
      batch.seqs.push_back(s);
      if (w.decode && config_.speculative.k > 0) {
        ++batch.drafting_seqs;
        draft_context_sum += w.seq->computed;
      }
    }
    if (batch.drafting_seqs > 0) {
      batch.speculative_k = config_.speculative.k;
      batch.draft_context = draft_context_sum / batch.drafting_seqs;
    }
    return batch;
  }

  // Accepted draft tokens: each is accepted with the acceptance probability until the first
  // rejection (Leviathan et al. 2023).
  int64_t accepted_drafts(int64_t proposed) {
    std::bernoulli_distribution accept(config_.speculative.acceptance);
    int64_t n = 0;
    while (n < proposed && accept(rng_)) ++n;
    return n;
  }

  void emit(Seq* s, int64_t tokens, double now, size_t& done) {
    auto& out = result_.requests[static_cast<size_t>(s->id)];
    if (s->generated == 0) {
      out.first_token_s = now;
    } else if (tokens > 0) {
      const double gap = (now - s->last_emit_s) / static_cast<double>(tokens);
      for (int64_t i = 0; i < tokens; ++i) out.inter_token_s.push_back(gap);
    }
    s->generated += tokens;
    s->last_emit_s = now;
    if (s->generated >= s->request->output_tokens) {
      s->state = SeqState::finished;
      out.finish_s = now;
      ++done;
      if (config_.policy != SchedulePolicy::static_batch) {
        blocks_.release(s->id);
        std::erase(running_, s);
      }
    }
  }

  void apply(const std::vector<Work>& work, double now, size_t& done, IterationRecord& record) {
    for (const auto& w : work) {
      Seq* s = w.seq;
      int64_t emitted = 0;
      if (w.decode) {
        ++record.decode_seqs;
        int64_t advance = 1;
        if (w.new_tokens > 1) {
          const int64_t proposed = w.new_tokens - 1;
          const int64_t accepted = accepted_drafts(proposed);
          result_.draft_tokens_proposed += proposed;
          result_.draft_tokens_accepted += accepted;
          advance = accepted + 1;
        }
        s->computed += advance;
        emitted = std::min(advance, s->request->output_tokens - s->generated);
      } else {
        record.prefill_tokens += w.new_tokens;
        s->computed += w.new_tokens;
        emitted = s->computed >= s->target ? 1 : 0;
      }
      // Full shared-prefix blocks become cache hits for later requests (before a finished
      // sequence gives its blocks back, so they stay cached).
      blocks_.mark_computed(s->id, s->computed, s->request->prefix_id,
                            s->shared_prefix_tokens() / config_.block_size);
      if (emitted > 0) emit(s, emitted, now, done);
    }
  }

  EngineConfig config_;
  const IterationCost& cost_;
  BlockManager blocks_;
  std::mt19937_64 rng_;
  std::vector<Seq> seqs_;
  std::vector<Seq*> arrivals_;
  std::deque<Seq*> waiting_, swapped_;
  std::vector<Seq*> running_;
  ServeResult result_;
  int64_t iteration_preemptions_ = 0;
  double swap_bytes_ = 0.0;
};

}  // namespace

namespace {
constexpr EnumNameTable<SchedulePolicy, 4> kSchedulePolicyNames = {{
    {SchedulePolicy::vllm, "vllm"},
    {SchedulePolicy::chunked, "chunked"},
    {SchedulePolicy::orca, "orca"},
    {SchedulePolicy::static_batch, "static"},
}};
}  // namespace

SchedulePolicy parse_schedule_policy(const std::string& name) {
  return parse_enum(kSchedulePolicyNames, name, "scheduling policy");
}

std::string schedule_policy_name(SchedulePolicy policy) {
  return std::string(enum_name(kSchedulePolicyNames, policy));
}

ServeResult run_engine(const std::vector<ServeRequest>& requests, const EngineConfig& config,
                       const IterationCost& cost) {
  if (config.kv_blocks < 1 || config.block_size < 1 || config.max_num_seqs < 1 ||
      config.max_num_batched_tokens < 1) {
    throw InputError("serving engine needs at least one KV block, sequence and batched token");
  }
  for (const auto& r : requests) {
    if (r.prompt_tokens < 1 || r.output_tokens < 1 || !(r.arrival_s >= 0.0)) {
      throw InputError(
          "every request needs prompt_tokens >= 1, output_tokens >= 1 and "
          "arrival_s >= 0");
    }
  }
  Engine engine(requests, config, cost);
  return engine.run();
}

}  // namespace inferlab
