#pragma once
#include <random>

#include "serve/engine.hpp"
#include "serve/executor.hpp"
#include "serve/iteration_cost.hpp"

namespace inferlab {

// The simulator's executor: an iteration takes what the cost model says, and each draft token
// of a speculative step is accepted with the configured probability until the first rejection
// (Leviathan et al. 2023), drawn from a generator seeded with config.seed.
class SimulatedExecutor : public Executor {
 public:
  SimulatedExecutor(const IterationCost& cost, const EngineConfig& config);
  IterationOutcome execute(const ScheduledIteration& iteration) override;

 private:
  IterationBatch to_batch(const ScheduledIteration& iteration) const;
  int64_t accepted_drafts(int64_t proposed);

  const IterationCost& cost_;
  SpeculativeConfig speculative_;
  std::mt19937_64 rng_;
};

}  // namespace inferlab
