// Chunked prefill (Sarathi-Serve, vLLM v1): every running decode first, then prompts under way
// continue, then new prompts' chunks fill what the token budget leaves.
#include <algorithm>

#include "serve/policies.hpp"
#include "serve/scheduler.hpp"

namespace inferlab {

std::vector<Work> schedule_chunked(Scheduler& s) {
  std::vector<Work> work;
  s.schedule_decodes(work);
  int64_t budget = s.config().max_num_batched_tokens;
  for (const auto& w : work) budget -= w.new_tokens;
  std::vector<Seq*>& running = s.running();
  for (size_t i = 0; i < running.size() && budget > 0; ++i) {
    Seq* seq = running[i];
    if (seq->computed >= seq->target) continue;
    const int64_t chunk = std::min(seq->target - seq->computed, budget);
    if (!s.grow_or_preempt(seq, seq->computed + chunk)) break;
    work.push_back({seq, chunk, false});
    budget -= chunk;
  }
  std::erase_if(work, [](const Work& w) { return w.seq->state != SeqState::running; });
  if (s.preemptions_this_iteration() > 0) return work;
  if (s.config().preemption == PreemptionMode::swap) s.swap_in();
  s.admit_waiting(work, budget, true);
  return work;
}

}  // namespace inferlab
