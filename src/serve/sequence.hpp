#pragma once
#include <cstdint>
#include <vector>

#include "serve/request.hpp"

namespace inferlab {

// Where a sequence is in the serving loop.
enum class SeqState { pending, waiting, running, swapped, finished };

// One request's progress through the scheduler.
struct Seq {
  const ServeRequest* request = nullptr;
  int64_t id = 0;
  int64_t computed = 0;   // tokens whose KV is in the cache
  int64_t target = 0;     // tokens to prefill before the next sample: the prompt, or after a
                          // recompute preemption the prompt and the tokens generated so far
  int64_t generated = 0;  // tokens emitted
  double last_emit_s = 0.0;
  SeqState state = SeqState::pending;
  std::vector<uint64_t> block_keys;  // prefix-cache keys of its prompt's full blocks
  bool forgotten = false;            // online: finished and let go of (Scheduler::forget)
  bool decoding() const { return computed >= target && generated > 0; }
};

// One sequence's share of an iteration: a prefill chunk of new_tokens, or a decode step (1
// token, or k + 1 under speculation: the last emitted token and k drafts to verify).
struct Work {
  Seq* seq = nullptr;
  int64_t new_tokens = 0;
  bool decode = false;
};

}  // namespace inferlab
