// Orca: iteration-level scheduling; whole prompts join the running decodes, and each request's
// KV is reserved up front for prompt + output (no paging, no preemption).
#include "serve/policies.hpp"
#include "serve/scheduler.hpp"

namespace inferlab {

std::vector<Work> schedule_orca(Scheduler& s) {
  std::vector<Work> work;
  int64_t budget = s.config().max_num_batched_tokens;
  for (Seq* seq : s.running()) {
    work.push_back({seq, s.decode_tokens(seq), true});
    budget -= work.back().new_tokens;
  }
  s.admit_waiting(work, budget, false);
  return work;
}

}  // namespace inferlab
