// Checking a stress case: the rule's rejections, the pool after the run, and every request's
// tokens against the same request alone (serving_stress_support.hpp says what is promised).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <span>

#include "engine/generate.hpp"
#include "engine/serving_stress_support.hpp"

namespace inferlab::engine::stress {

namespace {

int64_t blocks_for(int64_t tokens, int64_t block_size) {
  return (tokens + block_size - 1) / block_size;
}

// The backend the alone runs use: the target in the case's formats, eager (no CUDA graphs), one
// sequence, a pool and a batch of the whole context (a prompt runs in one pass).
BackendSpec alone_spec(const StressCase& c) {
  return {ModelRole::target,
          c.quant,
          c.config.block_size,
          blocks_for(c.context, c.config.block_size),
          c.context,
          1,
          false};
}

// The logits the alone model gives after `prefix` (a prompt and the tokens the alone run chose):
// the sequence teacher-forced in one pass.
std::vector<float> teacher_forced(Backend& alone, std::vector<int32_t> prefix) {
  SequenceChunk chunk;
  const auto tokens = static_cast<int64_t>(prefix.size());
  chunk.tokens = std::move(prefix);
  for (int64_t b = 0; b < alone.kv_layout().blocks_for(tokens); ++b) {
    chunk.block_table.push_back(static_cast<int32_t>(b));
  }
  const ForwardResult result = alone.forward({{chunk}});
  return {result.last(0).begin(), result.last(0).end()};
}

// The uniform draw the alone run's sampler made for its token `index` (one per token).
double draw_for(uint64_t seed, size_t index) {
  Sampler sampler(seed);
  SamplingParams any;
  any.temperature = 1.0;
  double u = 0;
  for (size_t i = 0; i <= index; ++i) u = sampler.draw(any);
  return u;
}

// Whether a token that sampling's truncation left out of the alone run's distribution (top_k,
// top_p) could be in it once every logit moves by up to `noise`: under top_k its logit lies
// within noise of the k-th largest; under top_p the probability of the tokens ranked above it
// (within the top_k) falls below top_p when those move down by noise and it moves up, each
// probability changing by at most a factor exp(2 × noise / temperature).
bool at_the_truncation_edge(std::span<const float> logits, int32_t token,
                            const SamplingParams& sampling, double noise) {
  std::vector<int32_t> order(logits.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) {
    return logits[static_cast<size_t>(x)] > logits[static_cast<size_t>(y)];
  });
  const auto rank =
      static_cast<size_t>(std::find(order.begin(), order.end(), token) - order.begin());
  const size_t k = sampling.top_k > 0 ? std::min(order.size(), static_cast<size_t>(sampling.top_k))
                                      : order.size();
  const double logit = logits[static_cast<size_t>(token)];
  if (rank >= k && logit < logits[static_cast<size_t>(order[k - 1])] - noise) return false;
  if (sampling.top_p >= 1.0) return true;
  // Probabilities over the top k (the token in place of the k-th where it was beyond it).
  const double top = logits[static_cast<size_t>(order[0])];
  double total = 0, above = 0;
  for (size_t i = 0; i < std::min(k, rank); ++i) {
    const double w = std::exp((logits[static_cast<size_t>(order[i])] - top) / sampling.temperature);
    total += w;
    above += w;
  }
  total += std::exp((logit - top) / sampling.temperature);
  if (rank < k) {
    for (size_t i = rank + 1; i < k; ++i) {
      total += std::exp((logits[static_cast<size_t>(order[i])] - top) / sampling.temperature);
    }
  }
  return above / total * std::exp(-2.0 * noise / sampling.temperature) < sampling.top_p;
}

struct Comparison {
  bool near_tie = false;
  double gap_share_of_bound = 0;  // a greedy divergence: the alone run's gap ÷ the noise bound
  std::string failure;
};

// Compares a request's batched tokens with its alone run's. At the first difference the
// sequence is teacher-forced through the alone backend: a greedy divergence is accepted when the
// batched token's logit is within `tolerance` × the row's largest |logit| of the alone top-1
// (what bf16 rounding in GEMMs of other row counts moves a logit by; a bug moves it further,
// and on the next token too); a sampled one
// when the draw lies within the distance such a logit change can move a cumulative-probability
// boundary (2 × tolerance × scale / temperature) of the batched token's interval. The tokens
// after an accepted divergence follow another sequence and are not compared.
Comparison compare(const std::vector<int32_t>& batched, const std::vector<int32_t>& alone,
                   const std::vector<int32_t>& prompt, const StressRequest& q, double tolerance,
                   Backend& alone_backend) {
  Comparison out;
  const size_t common = std::min(batched.size(), alone.size());
  size_t j = 0;
  while (j < common && batched[j] == alone[j]) ++j;
  if (j == common && batched.size() == alone.size()) return out;
  const auto tokens_text = [](const std::vector<int32_t>& t, size_t around) {
    const size_t from = around > 3 ? around - 3 : 0, to = std::min(t.size(), around + 4);
    return fmt::format("{}", fmt::join(t.begin() + static_cast<std::ptrdiff_t>(from),
                                       t.begin() + static_cast<std::ptrdiff_t>(to), " "));
  };
  out.failure =
      fmt::format("token {} of {}: batched {} (… {} …), alone {} (… {} …)", j, batched.size(),
                  j < batched.size() ? batched[j] : -1, tokens_text(batched, j),
                  j < alone.size() ? alone[j] : -1, tokens_text(alone, j));
  if (tolerance <= 0.0 || j == common) return out;
  std::vector<int32_t> prefix = prompt;
  prefix.insert(prefix.end(), alone.begin(), alone.begin() + static_cast<std::ptrdiff_t>(j));
  const std::vector<float> logits = teacher_forced(alone_backend, std::move(prefix));
  float scale = 0;
  for (float l : logits) scale = std::max(scale, std::abs(l));
  const double noise = tolerance * scale;
  const auto b = static_cast<size_t>(batched[j]), a = static_cast<size_t>(alone[j]);
  if (!sampling_draws(q.sampling)) {
    const double gap = static_cast<double>(logits[a]) - logits[b];
    out.failure += fmt::format(
        "; alone logits there: {:.5f} (alone) vs {:.5f} (batched), gap {:.2e}"
        " over a noise bound of {:.2e}",
        logits[a], logits[b], gap, noise);
    out.near_tie = gap <= noise;
    out.gap_share_of_bound = noise > 0 ? gap / noise : 0.0;
  } else {
    const double u = draw_for(q.seed, j);
    // The batched token's interval of cumulative probability, widened by the tokens whose
    // logits lie within 2 × noise of its own: those may come before or after it once the logits
    // move, and the distribution is ordered by probability (two tokens of 0.29 each that swap
    // move each other's interval by 0.29).
    const float mine = logits[b];
    double lo = -1, hi = -1, surely_before = 0, either_side = 0;
    for (const auto& [token, p] : sampling_distribution(logits, q.sampling)) {
      const float theirs = logits[static_cast<size_t>(token)];
      if (token == batched[j]) {
        hi = p;
      } else if (theirs > mine + 2.0 * noise) {
        surely_before += p;
      } else if (theirs >= mine - 2.0 * noise) {
        either_side += p;
      }
    }
    if (hi >= 0) lo = surely_before, hi += surely_before + either_side;
    const double reach = 2.0 * noise / q.sampling.temperature;
    if (lo < 0) {  // the alone run's top_k / top_p left the batched token out
      out.near_tie = at_the_truncation_edge(logits, batched[j], q.sampling, noise);
      out.failure += fmt::format(
          "; the batched token is outside the alone run's top_k {} / top_p {} and {} its edge "
          "within the noise bound {:.2e}",
          q.sampling.top_k, q.sampling.top_p, out.near_tie ? "at" : "not at", noise);
    } else {
      const double distance = u < lo ? lo - u : u >= hi ? u - hi : 0.0;
      out.failure += fmt::format(
          "; the draw {:.5f} is {:.2e} from the batched token's interval [{:.5f}, {:.5f}) "
          "(with the tokens within noise of it on either side), over a reach of {:.2e}",
          u, distance, lo, hi, reach);
      out.near_tie = distance <= reach;
    }
  }
  if (out.near_tie) out.failure.clear();
  return out;
}

// The request alone under the case's speculation (a sampled request's draws depend on its
// drafts): the same switches, a pool that holds it, nothing else in it.
std::vector<int32_t> alone_speculative(const StressCase& c, const StressRequest& q,
                                       BackendProvider& backends, std::string& failure) {
  StressCase alone = c;
  alone.requests = {q};
  alone.requests[0].request.arrival_s = 0;
  alone.requests[0].cancel_after_s = 0;  // its whole output: a cancelled one compares a prefix
  alone.config.kv_blocks =
      blocks_for(q.request.prompt_tokens + q.request.output_tokens, c.config.block_size);
  alone.cuda_graphs = false;
  const BatchedRun run = run_case(alone, backends);
  failure = run.failure;
  return run.tokens[0];
}

}  // namespace

double gpu_batch_noise_tolerance(const QuantConfig& quant) {
  if (quant.quantized_activations()) return 0.125;
  const bool integer_weights = quant.weights == DType::int8 || quant.weights == DType::int4;
  return 1.5e-2 * (integer_weights ? 2.0 : 1.0) * (quant.kv != DType::bf16 ? 2.5 : 1.0);
}

void StressReport::add(const StressReport& o) {
  requests += o.requests;
  completed += o.completed;
  rejected += o.rejected;
  ended_early += o.ended_early;
  greedy_checked += o.greedy_checked;
  sampled_checked += o.sampled_checked;
  rerun_checked += o.rerun_checked;
  near_ties += o.near_ties;
  near_tie_peak = std::max(near_tie_peak, o.near_tie_peak);
  preemptions += o.preemptions;
  prefix_hit_tokens += o.prefix_hit_tokens;
  drafts_proposed += o.drafts_proposed;
  drafts_accepted += o.drafts_accepted;
  failures.insert(failures.end(), o.failures.begin(), o.failures.end());
}

std::string StressReport::summary() const {
  return fmt::format(
      "requests {} completed {} rejected {} ended_early {} greedy_checked {} sampled_checked {} "
      "rerun_checked {} near_ties {} preemptions {} prefix_hit_tokens {} drafts_proposed {} "
      "drafts_accepted {} near_tie_peak {:.3f} failures {}",
      requests, completed, rejected, ended_early, greedy_checked, sampled_checked, rerun_checked,
      near_ties, preemptions, prefix_hit_tokens, drafts_proposed, drafts_accepted, near_tie_peak,
      failures.size());
}

StressReport check_case(const StressCase& c, BackendProvider& backends) {
  StressReport report;
  report.requests = static_cast<int64_t>(c.requests.size());
  const BatchedRun run = run_case(c, backends);
  if (!run.failure.empty()) {
    report.failures.push_back(run.failure);
    return report;
  }
  report.preemptions = run.preemptions;
  report.prefix_hit_tokens = run.prefix_hit_tokens;
  report.drafts_proposed = run.drafts_proposed;
  report.drafts_accepted = run.drafts_accepted;
  if (run.free_blocks_after != run.pool_blocks) {
    report.failures.push_back(
        fmt::format("{} of the pool's {} KV blocks are still held after the run",
                    run.pool_blocks - run.free_blocks_after, run.pool_blocks));
  }
  std::vector<size_t> to_compare;
  for (size_t i = 0; i < c.requests.size(); ++i) {
    const StressRequest& q = c.requests[i];
    const ServeRequest& r = q.request;
    const RequestOutcome& out = run.outcomes[i];
    const std::string who =
        fmt::format("request {} (prompt {}, output {})", i, r.prompt_tokens, r.output_tokens);
    // A client gone before its request reached the queue's front left before the rule judged it.
    const bool cancelled = q.cancel_after_s > 0 && out.ended_early;
    const bool judged = !(cancelled && run.tokens[i].empty());
    if (judged && (out.rejected != must_reject(r, c.config) ||
                   out.past_max_model_len != exceeds_max_model_len(r, c.config))) {
      report.failures.push_back(fmt::format(
          "{}: rejected {} (past max-model-len {}), the rule says {} (past {}; pool {} blocks)",
          who, out.rejected, out.past_max_model_len, must_reject(r, c.config),
          exceeds_max_model_len(r, c.config), c.config.kv_blocks));
    }
    if (out.rejected) {
      ++report.rejected;
      if (!run.tokens[i].empty()) {
        report.failures.push_back(
            fmt::format("{}: rejected after it ran ({} tokens)", who, run.tokens[i].size()));
      }
      continue;
    }
    // A client that went away keeps what it had streamed: any count up to the output.
    const auto tokens = static_cast<int64_t>(run.tokens[i].size());
    const int64_t expected = q.stop_after > 0 ? q.stop_after : r.output_tokens;
    if (cancelled ? tokens > expected : tokens != expected) {
      report.failures.push_back(fmt::format("{}: {} tokens, {}{} expected", who, tokens,
                                            cancelled ? "at most " : "", expected));
      continue;
    }
    ++(q.stop_after > 0 || cancelled ? report.ended_early : report.completed);
    if (tokens > 0) to_compare.push_back(i);
  }
  if (to_compare.empty()) return report;

  const double tolerance = backends.tolerance(c.quant);
  Backend* alone = nullptr;
  const auto alone_backend = [&]() -> Backend& {
    if (alone == nullptr) alone = &backends.get(alone_spec(c));
    return *alone;
  };
  for (size_t i : to_compare) {
    const StressRequest& q = c.requests[i];
    const std::vector<int32_t>& tokens = run.tokens[i];
    const bool sampled = sampling_draws(q.sampling);
    const bool speculative = c.drafting != Drafting::none;
    std::vector<int32_t> reference;
    if (sampled && speculative) {
      // Preempted by recompute, its draws were not the alone run's (the header says why); on
      // the GPU a speculative step's draws cannot be matched to the alone run's. The rerun below
      // checks these.
      if ((c.config.preemption == PreemptionMode::recompute && run.outcomes[i].preemptions > 0) ||
          tolerance > 0.0) {
        continue;
      }
      std::string failure;
      reference = alone_speculative(c, q, backends, failure);
      if (!failure.empty()) {
        report.failures.push_back(fmt::format("request {} alone: {}", i, failure));
        continue;
      }
      reference.resize(std::min(reference.size(), tokens.size()));
    } else {
      GenerateOptions options;
      options.max_new_tokens = static_cast<int64_t>(tokens.size());
      options.sampling = q.sampling;
      options.seed = q.seed;
      reference = generate(alone_backend(), run.prompts[i], options).tokens;
    }
    ++(sampled ? report.sampled_checked : report.greedy_checked);
    const Comparison cmp =
        compare(tokens, reference, run.prompts[i], q, tolerance, alone_backend());
    report.near_ties += cmp.near_tie;
    if (cmp.near_tie) report.near_tie_peak = std::max(report.near_tie_peak, cmp.gap_share_of_bound);
    if (!cmp.failure.empty()) {
      report.failures.push_back(fmt::format("request {} (prompt {}, output {}, {}): {}", i,
                                            run.prompts[i].size(), tokens.size(),
                                            sampled ? "sampled" : "greedy", cmp.failure));
    }
  }

  // Seeded sampling under speculation: the same workload again gives the same tokens.
  if (c.has_sampling() && c.drafting != Drafting::none) {
    const BatchedRun again = run_case(c, backends);
    if (!again.failure.empty()) {
      report.failures.push_back("the second run: " + again.failure);
    } else {
      for (size_t i : to_compare) {
        if (!sampling_draws(c.requests[i].sampling)) continue;
        ++report.rerun_checked;
        if (again.tokens[i] != run.tokens[i]) {
          report.failures.push_back(
              fmt::format("request {} (sampled): other tokens when the workload ran again", i));
        }
      }
    }
  }
  return report;
}

}  // namespace inferlab::engine::stress
