#pragma once
#include <cstdint>
#include <vector>

#include "serve/block_manager.hpp"
#include "serve/sequence.hpp"

namespace inferlab {

// A sequence's KV blocks copied to host memory (preempted by swap) or back (swapped in), before
// the iteration's forward pass and in the order the scheduler made them: a block a swap-out
// gives up may be the one a later swap-in or the forward pass writes.
struct KvSwap {
  int64_t seq = 0;
  bool to_host = true;
  std::vector<int64_t> blocks;  // in position order
};

// What the scheduler hands an executor for one iteration.
struct ScheduledIteration {
  std::vector<Work> work;
  std::vector<KvSwap> swaps;
  double swap_bytes = 0.0;               // KV copied between host and device before it runs
  const BlockManager* blocks = nullptr;  // the sequences' KV blocks
  // Nothing to run: no work and no swaps (an iteration of swaps alone still runs its copies).
  bool idle() const { return work.empty() && swaps.empty(); }
};

// What an iteration did: how long it took, and for each work item (in order) how many
// positions its sequence advanced: a prefill chunk's new_tokens; a decode step's 1 + the
// accepted draft tokens.
struct IterationOutcome {
  double duration_s = 0.0;
  // The GPU's part of it where the executor measures one (the engine: CUDA events from the
  // forward's first kernel to its last), else the same as duration_s; the rest is the host's.
  double device_s = 0.0;
  // What the simulator's cost model prices this very iteration at (PricedExecutor; the
  // simulator's own executor: duration_s); negative where nothing priced it.
  double priced_s = -1.0;
  std::vector<int64_t> advance;
  // Per work item, the draft tokens a decode proposed where the executor chose fewer than the
  // scheduler reserved (the simulator with a mean proposal length); empty: new_tokens − 1.
  std::vector<int64_t> proposed;
};

// Carries out the iterations the scheduler forms (DESIGN: one scheduler, two executors). The
// simulator's prices them with a cost model on a simulated clock (serve/simulated_executor);
// the engine's runs them on a model backend.
class Executor {
 public:
  virtual ~Executor() = default;
  virtual IterationOutcome execute(const ScheduledIteration& iteration) = 0;
};

}  // namespace inferlab
