#pragma once
#include <random>

#include "serve/executor.hpp"
#include "serve/iteration_cost.hpp"
#include "serve/serving_loop.hpp"

namespace inferlab {

// What the cost model prices for `iteration`: each scheduled sequence's new tokens at its
// context, and the draft model's work where `speculative` proposes with one.
IterationBatch iteration_batch(const ScheduledIteration& iteration,
                               const SpeculativeConfig& speculative);

// The simulator's executor: an iteration takes what the cost model says, and each draft token
// of a speculative step is accepted with the configured probability until the first rejection
// (Leviathan et al. 2023), drawn from a generator seeded with config.seed. With a mean proposal
// length under k (prompt lookup without a match proposes nothing) each step proposes floor or
// ceil of it, one draw a step for all sequences from the same generator, and its verification
// is priced at that width, as `generate` runs it (the serving engine pads prompt lookup's
// proposals to k: leave the mean out to price that).
class SimulatedExecutor : public Executor {
 public:
  SimulatedExecutor(const IterationCost& cost, const SchedulerConfig& config);
  IterationOutcome execute(const ScheduledIteration& iteration) override;

 private:
  bool proposes_fewer() const;
  int64_t proposed_drafts();
  int64_t accepted_drafts(int64_t proposed);

  const IterationCost& cost_;
  SpeculativeConfig speculative_;
  std::mt19937_64 rng_;
};

// Runs each iteration on `measured` (the engine) and prices the same iteration with `cost`, so
// that every measured iteration has the simulator's price beside it (priced_s): where the two
// part is then seen iteration by iteration, not only in the percentiles of diverged timelines.
class PricedExecutor : public Executor {
 public:
  PricedExecutor(Executor& measured, const IterationCost& cost, const SchedulerConfig& config)
      : measured_(measured), cost_(cost), speculative_(config.speculative) {}
  IterationOutcome execute(const ScheduledIteration& iteration) override;

 private:
  Executor& measured_;
  const IterationCost& cost_;
  SpeculativeConfig speculative_;
};

}  // namespace inferlab
