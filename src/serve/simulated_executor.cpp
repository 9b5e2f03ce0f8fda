#include "serve/simulated_executor.hpp"

namespace inferlab {

SimulatedExecutor::SimulatedExecutor(const IterationCost& cost, const SchedulerConfig& config)
    : cost_(cost), speculative_(config.speculative), rng_(config.seed) {}

IterationBatch iteration_batch(const ScheduledIteration& iteration,
                               const SpeculativeConfig& speculative) {
  IterationBatch batch;
  batch.swap_bytes = iteration.swap_bytes;
  int64_t draft_context_sum = 0;
  for (const auto& w : iteration.work) {
    ScheduledSeq s;
    s.new_tokens = w.new_tokens;
    s.context = w.seq->computed + w.new_tokens;
    s.samples = w.decode || w.seq->computed + w.new_tokens >= w.seq->target;
    s.decode = w.decode;
    batch.seqs.push_back(s);
    if (w.decode && speculative.k > 0) {
      ++batch.drafting_seqs;
      draft_context_sum += w.seq->computed;
    }
  }
  if (batch.drafting_seqs > 0) {
    batch.speculative_k = speculative.k;
    batch.draft_context = draft_context_sum / batch.drafting_seqs;
  }
  return batch;
}

int64_t SimulatedExecutor::accepted_drafts(int64_t proposed) {
  std::bernoulli_distribution accept(speculative_.acceptance);
  int64_t n = 0;
  while (n < proposed && accept(rng_)) ++n;
  return n;
}

IterationOutcome SimulatedExecutor::execute(const ScheduledIteration& iteration) {
  IterationOutcome outcome;
  outcome.duration_s = cost_.time_s(iteration_batch(iteration, speculative_));
  outcome.device_s = outcome.duration_s;
  outcome.priced_s = outcome.duration_s;
  for (const auto& w : iteration.work) {
    if (w.decode) {
      outcome.advance.push_back(w.new_tokens > 1 ? 1 + accepted_drafts(w.new_tokens - 1) : 1);
    } else {
      outcome.advance.push_back(w.new_tokens);
    }
  }
  return outcome;
}

IterationOutcome PricedExecutor::execute(const ScheduledIteration& iteration) {
  // Priced before it runs: the scheduler's state (each sequence's computed positions) is what
  // the iteration starts from until update() applies it.
  const double priced_s = cost_.time_s(iteration_batch(iteration, speculative_));
  IterationOutcome outcome = measured_.execute(iteration);
  outcome.priced_s = priced_s;
  return outcome;
}

}  // namespace inferlab
