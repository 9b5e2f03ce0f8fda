// vLLM's default (v0): an iteration runs waiting prompts whole (prefill only) when any can be
// admitted, otherwise one decode step for every running sequence; swapped-out sequences come
// back when an iteration preempted nothing.
#include "serve/policies.hpp"
#include "serve/scheduler.hpp"

namespace inferlab {

std::vector<Work> schedule_vllm(Scheduler& s) {
  std::vector<Work> work;
  if (s.swapped_empty()) {
    int64_t budget = s.config().max_num_batched_tokens;
    s.admit_waiting(work, budget, false);
    if (!work.empty()) return work;
  }
  s.schedule_decodes(work);
  if (s.preemptions_this_iteration() == 0) s.swap_in();
  return work;
}

}  // namespace inferlab
