// Static batching, the baseline: a batch is formed when the engine is idle, runs its prefill,
// then decodes until its last member finishes; arrivals wait for the next batch.
#include <algorithm>
#include <limits>

#include "serve/policies.hpp"
#include "serve/scheduler.hpp"

namespace inferlab {

std::vector<Work> schedule_static(Scheduler& s) {
  std::vector<Work> work;
  std::vector<Seq*>& running = s.running();
  const bool batch_running = std::any_of(running.begin(), running.end(), [](const Seq* seq) {
    return seq->state == SeqState::running;
  });
  if (!batch_running) {
    for (Seq* seq : running) s.release_blocks(seq);  // the finished batch gives its memory back
    running.clear();
    int64_t unlimited = std::numeric_limits<int64_t>::max();  // a batch takes every prompt whole
    s.admit_waiting(work, unlimited, false);
    return work;
  }
  for (Seq* seq : running) {
    if (seq->state != SeqState::running) continue;
    work.push_back({seq, s.decode_tokens(seq), true});
  }
  return work;
}

}  // namespace inferlab
