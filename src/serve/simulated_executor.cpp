#include "serve/simulated_executor.hpp"

#include <algorithm>
#include <cmath>

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

bool SimulatedExecutor::proposes_fewer() const {
  const double mean = speculative_.proposed_mean;
  return mean > 0.0 && mean < static_cast<double>(speculative_.k);
}

int64_t SimulatedExecutor::proposed_drafts() {
  if (!proposes_fewer()) return speculative_.k;
  // floor(mean) or one more, with the probabilities that make the mean `mean`.
  const double mean = speculative_.proposed_mean;
  const auto low = static_cast<int64_t>(std::floor(mean));
  std::bernoulli_distribution one_more(mean - static_cast<double>(low));
  return low + (one_more(rng_) ? 1 : 0);
}

int64_t SimulatedExecutor::accepted_drafts(int64_t proposed) {
  std::bernoulli_distribution accept(speculative_.acceptance);
  int64_t n = 0;
  while (n < proposed && accept(rng_)) ++n;
  return n;
}

IterationOutcome SimulatedExecutor::execute(const ScheduledIteration& iteration) {
  IterationBatch batch = iteration_batch(iteration, speculative_);
  // A decode verifies what it proposes this step and the token before it: the scheduler
  // reserved k + 1 positions, a drafter that proposes fewer runs a narrower pass. One width a
  // step for every sequence, so that a batch's passes stay one graph shape (the engine pads
  // its sequences' proposals to one width too).
  const int64_t this_step = proposed_drafts();
  std::vector<int64_t> proposed(iteration.work.size(), 0);
  int64_t most_proposed = 0;
  for (size_t i = 0; i < iteration.work.size(); ++i) {
    const Work& w = iteration.work[i];
    if (!w.decode || w.new_tokens <= 1) continue;
    proposed[i] = std::min(w.new_tokens - 1, this_step);
    const int64_t unused = w.new_tokens - 1 - proposed[i];
    batch.seqs[i].new_tokens -= unused;
    batch.seqs[i].context -= unused;
    most_proposed = std::max(most_proposed, proposed[i]);
  }
  // With a mean proposal length the draft model runs as many steps as the longest proposal.
  if (proposes_fewer() && batch.speculative_k > 0) {
    batch.speculative_k = static_cast<int>(most_proposed);
  }

  IterationOutcome outcome;
  outcome.duration_s = cost_.time_s(batch);
  outcome.device_s = outcome.duration_s;
  outcome.priced_s = outcome.duration_s;
  for (size_t i = 0; i < iteration.work.size(); ++i) {
    const Work& w = iteration.work[i];
    outcome.advance.push_back(w.decode ? 1 + accepted_drafts(proposed[i]) : w.new_tokens);
  }
  if (proposes_fewer()) outcome.proposed = std::move(proposed);
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
