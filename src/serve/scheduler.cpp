#include "serve/scheduler.hpp"

#include <algorithm>
#include <stdexcept>

#include "serve/block_keys.hpp"
#include "serve/policies.hpp"

namespace inferlab {

SchedulePolicyFn policy_function(SchedulePolicy policy) {
  switch (policy) {
    case SchedulePolicy::vllm:
      return schedule_vllm;
    case SchedulePolicy::chunked:
      return schedule_chunked;
    case SchedulePolicy::orca:
      return schedule_orca;
    case SchedulePolicy::static_batch:
      return schedule_static;
  }
  return schedule_chunked;
}

Scheduler::Scheduler(const std::vector<ServeRequest>& requests, const SchedulerConfig& config)
    : config_(config),
      policy_(policy_function(config.policy)),
      blocks_(config.kv_blocks, config.block_size,
              config.prefix_caching && config.policy != SchedulePolicy::orca &&
                  config.policy != SchedulePolicy::static_batch) {
  seqs_.resize(requests.size());
  outcomes_.resize(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    init_seq(seqs_[i], requests[i], static_cast<int64_t>(i));
    arrivals_.push_back(&seqs_[i]);
  }
  std::stable_sort(arrivals_.begin(), arrivals_.end(), [](const Seq* a, const Seq* b) {
    return a->request->arrival_s < b->request->arrival_s;
  });
  result_.kv_blocks = config.kv_blocks;
}

void Scheduler::init_seq(Seq& seq, const ServeRequest& request, int64_t id) {
  seq.request = &request;
  seq.id = id;
  seq.target = request.prompt_tokens;
  if (!request.block_keys.empty()) {
    seq.block_keys = request.block_keys;
  } else if (request.prefix_id >= 0) {
    seq.block_keys =
        prefix_block_keys(request.prefix_id, request.prefix_tokens / config_.block_size);
  }
  auto& out = outcome_ref(id);
  out.arrival_s = request.arrival_s;
  out.prompt_tokens = request.prompt_tokens;
  out.output_tokens = request.output_tokens;
}

int64_t Scheduler::add(ServeRequest request, double now) {
  request.arrival_s = now;
  added_requests_.push_back(std::move(request));
  if (!arrivals_.empty()) {
    throw std::logic_error("scheduler: requests join online only when it started without any");
  }
  const auto id = first_id_ + static_cast<int64_t>(seqs_.size());
  seqs_.emplace_back();
  outcomes_.emplace_back();
  Seq& seq = seqs_.back();
  init_seq(seq, added_requests_.back(), id);
  seq.state = SeqState::waiting;
  waiting_.push_back(&seq);
  return id;
}

void Scheduler::end_early(int64_t id, double now) {
  Seq* s = &seq_ref(id);
  if (s->state == SeqState::finished) return;
  std::erase(waiting_, s);
  std::erase(swapped_, s);
  std::erase(running_, s);
  blocks_.release(s->id);
  s->state = SeqState::finished;
  auto& out = outcome_ref(id);
  out.finish_s = now;
  out.output_tokens = s->generated;
  out.ended_early = true;
  ++done_;
}

void Scheduler::forget(int64_t id) {
  seq_ref(id).forgotten = true;
  // Finished and forgotten requests at the front go; ids keep counting (first_id_).
  while (!seqs_.empty() && seqs_.front().forgotten) {
    seqs_.pop_front();
    outcomes_.pop_front();
    added_requests_.pop_front();
    ++first_id_;
  }
}

double Scheduler::first_arrival_s() const {
  return arrivals_.empty() ? 0.0 : arrivals_.front()->request->arrival_s;
}

void Scheduler::arrive(double now) {
  while (next_arrival_ < arrivals_.size() && arrivals_[next_arrival_]->request->arrival_s <= now) {
    Seq* s = arrivals_[next_arrival_++];
    s->state = SeqState::waiting;
    waiting_.push_back(s);
  }
}

ServeResult Scheduler::take_result() {
  result_.requests.assign(std::make_move_iterator(outcomes_.begin()),
                          std::make_move_iterator(outcomes_.end()));
  return std::move(result_);
}

ScheduledIteration Scheduler::schedule() {
  iteration_preemptions_ = 0;
  swaps_.clear();
  ScheduledIteration iteration;
  iteration.work = policy_(*this);
  // The traffic the simulator prices: every swapped block, out or in.
  for (const KvSwap& swap : swaps_) {
    iteration.swap_bytes += static_cast<double>(swap.blocks.size()) * config_.kv_block_bytes;
  }
  iteration.swaps = std::move(swaps_);
  iteration.blocks = &blocks_;
  return iteration;
}

bool Scheduler::paged() const {
  return config_.policy == SchedulePolicy::vllm || config_.policy == SchedulePolicy::chunked;
}

int64_t Scheduler::decode_tokens(const Seq* s) const {
  const int64_t remaining = s->request->output_tokens - s->generated;
  return std::min<int64_t>(1 + config_.speculative.k, std::max<int64_t>(remaining, 1));
}

// A request past max_model_len, or one whose prompt and output cannot fit even in an empty
// cache, is turned away before it runs (vLLM refuses the first when it arrives; here it leaves
// when it reaches the queue's front, which changes no other request's schedule). Paged, a
// sequence holds at most prompt + output − 1 positions (its last token is never fed back, and a
// decode step asks for no more than it still has to emit); one admitted for its prompt alone
// would, once alone in the pool, preempt itself for ever by swap, or be rejected after it ran by
// recompute. Reserved up front, it holds prompt + output.
bool Scheduler::reject_if_impossible(Seq* s) {
  const ServeRequest& r = *s->request;
  const bool too_long = exceeds_max_model_len(r, config_);
  const int64_t need = r.prompt_tokens + r.output_tokens - (paged() ? 1 : 0);
  if (!too_long && blocks_.blocks_for(need) <= blocks_.total_blocks()) return false;
  s->state = SeqState::finished;
  outcome_ref(s->id).rejected = true;
  outcome_ref(s->id).past_max_model_len = too_long;
  ++done_;
  return true;
}

// Evicts the most recently admitted running sequence: one scheduled after the sequence that
// needs blocks, or that sequence itself when it is the last (as vLLM does). Returns it.
Seq* Scheduler::preempt() {
  Seq* victim = running_.back();
  running_.pop_back();
  ++iteration_preemptions_;
  ++result_.preemptions;
  ++outcome_ref(victim->id).preemptions;
  if (config_.preemption == PreemptionMode::swap) {
    swaps_.push_back({victim->id, true, blocks_.blocks_of(victim->id)});
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

bool Scheduler::grow_or_preempt(Seq* s, int64_t tokens) {
  while (!blocks_.grow(s->id, tokens)) {
    if (preempt() == s) return false;
  }
  return true;
}

// Admits a waiting sequence: takes its cached prefix blocks and reserves what it needs.
bool Scheduler::admit(Seq* s, int64_t chunk_limit, int64_t& new_tokens) {
  const auto& r = *s->request;
  int64_t hit_tokens = 0;
  if (s->computed == 0 && paged()) {
    // At least one prompt token is always computed (its logits give the first token).
    const int64_t usable =
        std::min(static_cast<int64_t>(s->block_keys.size()), (s->target - 1) / config_.block_size);
    const std::span<const uint64_t> keys(s->block_keys.data(), static_cast<size_t>(usable));
    const int64_t hits = blocks_.cached_prefix_blocks(keys);
    const int64_t uncached = s->target - hits * config_.block_size;
    const int64_t chunk = std::min(uncached, chunk_limit);
    if (chunk < 1) return false;
    // The whole prompt must fit, not only its first chunk (as vLLM's can_allocate asks): a long
    // prompt admitted for a chunk in a nearly full pool grows until it evicts itself, starts
    // again and evicts itself again until some decode ends (a 100k-token workload on the H200
    // recomputed 1.09M tokens so; docs/MEASUREMENTS.md §29).
    if (blocks_.blocks_for(s->target) - hits > blocks_.free_blocks()) return false;
    blocks_.acquire_prefix(s->id, keys);
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
    auto& out = outcome_ref(s->id);
    out.prefix_hit_tokens = hit_tokens;
    result_.prefix_hit_tokens += hit_tokens;
    result_.prompt_tokens += r.prompt_tokens;
  }
  s->state = SeqState::running;
  running_.push_back(s);
  return true;
}

void Scheduler::admit_waiting(std::vector<Work>& work, int64_t& budget, bool chunks) {
  while (!waiting_.empty() && static_cast<int64_t>(running_.size()) < config_.max_num_seqs &&
         (!chunks || (budget > 0 && swapped_.empty()))) {
    Seq* s = waiting_.front();
    if (reject_if_impossible(s)) {
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

void Scheduler::schedule_decodes(std::vector<Work>& work) {
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

void Scheduler::swap_in() {
  while (!swapped_.empty()) {
    Seq* s = swapped_.front();
    if (!blocks_.grow(s->id, s->computed)) break;
    swaps_.push_back({s->id, false, blocks_.blocks_of(s->id)});
    swapped_.pop_front();
    s->state = SeqState::running;
    running_.push_back(s);
  }
}

void Scheduler::emit(Seq* s, int64_t tokens, double now) {
  auto& out = outcome_ref(s->id);
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
    ++done_;
    if (config_.policy != SchedulePolicy::static_batch) {
      blocks_.release(s->id);
      std::erase(running_, s);
    }
  }
}

Scheduler::UpdateCounts Scheduler::update(const ScheduledIteration& iteration,
                                          const IterationOutcome& outcome, double now) {
  UpdateCounts counts;
  for (size_t i = 0; i < iteration.work.size(); ++i) {
    const Work& w = iteration.work[i];
    Seq* s = w.seq;
    int64_t emitted = 0;
    if (w.decode) {
      ++counts.decode_seqs;
      const int64_t advance = outcome.advance[i];
      if (w.new_tokens > 1) {
        result_.draft_tokens_proposed +=
            outcome.proposed.empty() ? w.new_tokens - 1 : outcome.proposed[i];
        result_.draft_tokens_accepted += advance - 1;
      }
      s->computed += advance;
      emitted = std::min(advance, s->request->output_tokens - s->generated);
    } else {
      counts.prefill_tokens += w.new_tokens;
      s->computed += w.new_tokens;
      emitted = s->computed >= s->target ? 1 : 0;
    }
    // Full keyed prompt blocks become cache hits for later requests (before a finished
    // sequence gives its blocks back, so they stay cached).
    blocks_.mark_computed(s->id, s->computed, s->block_keys);
    if (emitted > 0) emit(s, emitted, now);
  }
  return counts;
}

}  // namespace inferlab
