#pragma once
#include <cstdint>

#include "engine/backend.hpp"
#include "engine/engine_bench.hpp"
#include "engine/speculative.hpp"

namespace inferlab::engine {

// What speculation costs on this device, where acceptance means nothing (random weights): the
// target's plain decode step, its verification of k + 1 tokens in one pass (the argmax of every
// row, as generate_speculative's greedy verdict takes them), and one drafting step (a draft model's
// decode step, or the n-gram lookup on the host), all at the same context length.
struct SpeculativeCosts {
  int64_t k = 0, context_tokens = 0;
  bool device_timed = false;  // CUDA events where the backend has them, else host wall time
  TimingStats decode_step, verify, draft_step;
  // The same passes by the host's clock, each from its call to its result back on the host
  // (launch, metadata upload, copy back and wait): what a loop that waits for every pass, as
  // generate does, pays a pass. Equal to the above where the backend has no device timer.
  TimingStats decode_step_wall, verify_wall, draft_step_wall;
  // With a draft model: whole rounds (k draft steps, then the verification) by the host's clock,
  // and the verification inside them (device time, or wall where none; and wall); no samples
  // otherwise.
  TimingStats round_wall, verify_in_round, verify_in_round_wall;
  // Speed-up over plain decoding at acceptance rates 0.5 … 1.0 (speculative_speedup of the
  // medians, draft and verify in units of the decode step).
  std::vector<std::pair<double, double>> speedup_at_acceptance;
};

// `repeats` timed passes of each after a prefill of context_tokens random ids; draft is null
// for n-gram drafting.
SpeculativeCosts measure_speculative_costs(Backend& target, Backend* draft,
                                           const SpeculativeOptions& speculative,
                                           int64_t context_tokens, int64_t repeats, uint64_t seed);

}  // namespace inferlab::engine
