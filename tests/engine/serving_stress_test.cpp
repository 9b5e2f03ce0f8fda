// ServingStress: random serving workloads on the CPU reference (fixed seeds, in CI), each run
// through serve's scheduler and the ServingExecutor and checked request by request against the
// request alone (serving_stress_support.hpp): rejections by the max_model_len and pool rules,
// the pool whole afterwards, no exception and no hang, greedy and seeded sampled tokens exactly
// the alone run's. The CPU reference runs every weight and KV format as the fp32 reference of
// the quantized model, so the formats are checked too. INFERLAB_STRESS_SEEDS=FIRST:COUNT runs
// other seeds (ServingStress.SeedsFromTheEnvironment). And checks of the harness itself: a
// batch-dependent token, a run that never ends and a batch over the limits are caught.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <set>
#include <span>
#include <string>

#include "engine/init_weights.hpp"
#include "engine/serving_stress_cpu.hpp"
#include "engine/serving_stress_support.hpp"
#include "forwarding_backend.hpp"
#include "serve/iteration_cost.hpp"
#include "test_support.hpp"

namespace inferlab::engine::stress {
namespace {

// Past the longest output (2,000) so that some of those run; long prompts are rarer than short
// ones in the draws, which keeps a case near a second on two cores.
constexpr int64_t kContext = 2304;
constexpr int64_t kVocab = 128;

LlamaConfig config_of(nlohmann::json json, const std::string& name) {
  return parse_llama_config(json, name, "stress test");
}

CpuStressModels models() {
  const LlamaConfig target = config_of(testing::tiny_llama_config(kVocab, kContext), "target");
  nlohmann::json small = testing::tiny_llama_config(kVocab, kContext);
  small["num_hidden_layers"] = 1;
  const LlamaConfig draft = config_of(small, "small draft");
  return {{target, random_llama_weights(target, 3)}, {draft, random_llama_weights(draft, 17)}};
}

StressSpace cpu_space() {
  StressSpace s;
  s.context = kContext;
  s.vocab = kVocab;
  QuantConfig q;
  q.group_size = 32;  // int4 groups must divide the tiny model's widths (32, 64)
  for (DType w : {DType::bf16, DType::int8, DType::int4, DType::fp8}) {
    q.weights = w;
    s.weight_formats.push_back(q);
  }
  q.weights = DType::int8;
  q.activations = DType::int8;  // W8A8
  s.weight_formats.push_back(q);
  s.kv_formats = {DType::bf16, DType::int8, DType::fp8};
  s.block_sizes = {8, 16, 32};
  s.max_requests = 16;
  s.token_budget = 4000;
  return s;
}

StressReport run_seeds(uint64_t first, uint64_t count) {
  CpuBackendProvider backends(models());
  StressReport total;
  for (uint64_t seed = first; seed < first + count; ++seed) {
    const StressCase c = draw_case(seed, cpu_space());
    backends.reset();
    const StressReport report = check_case(c, backends);
    for (const std::string& failure : report.failures) {
      ADD_FAILURE() << c.describe() << "\n  " << failure;
    }
    std::cout << "seed " << seed << ": " << report.summary() << "\n";
    total.add(report);
  }
  std::cout << "seeds " << first << " to " << first + count - 1 << ": " << total.summary() << "\n";
  return total;
}

// Four groups of ten seeds, so that CTest can run them side by side.
TEST(ServingStress, Seeds1To10) {
  const StressReport r = run_seeds(1, 10);
  EXPECT_GT(r.completed, 0);
  EXPECT_GT(r.greedy_checked, 0);
}

TEST(ServingStress, Seeds11To20) {
  EXPECT_GT(run_seeds(11, 10).completed, 0);
}

TEST(ServingStress, Seeds21To30) {
  EXPECT_GT(run_seeds(21, 10).completed, 0);
}

TEST(ServingStress, Seeds31To40) {
  EXPECT_GT(run_seeds(31, 10).completed, 0);
}

TEST(ServingStress, SeedsFromTheEnvironment) {
  const char* seeds = std::getenv("INFERLAB_STRESS_SEEDS");
  if (seeds == nullptr) GTEST_SKIP() << "INFERLAB_STRESS_SEEDS=FIRST:COUNT is not set";
  const std::string text = seeds;
  const size_t colon = text.find(':');
  ASSERT_NE(colon, std::string::npos) << "INFERLAB_STRESS_SEEDS=FIRST:COUNT, not " << text;
  run_seeds(std::stoull(text.substr(0, colon)), std::stoull(text.substr(colon + 1)));
}

// Iterations of a millisecond: the scheduler alone, to see what a case's schedule does.
class Millisecond : public IterationCost {
 public:
  double time_s(const IterationBatch&) const override { return 1e-3; }
};

// The forty fixed seeds draw every switch the issue names that the CPU runs, and the edges of
// the rules: were the draws to change, this says which feature CI stopped covering. Whether a
// case preempts is its schedule's doing: the scheduler alone (no speculation) tells.
TEST(ServingStress, TheFixedSeedsDrawEveryFeature) {
  std::set<std::string> seen;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const StressCase c = draw_case(seed, cpu_space());
    const SchedulerConfig& e = c.config;
    seen.insert(c.online ? "server path" : "serve path");
    seen.insert("policy " + schedule_policy_name(e.policy));
    seen.insert(std::string("drafting ") + drafting_name(c.drafting));
    seen.insert("weights " + std::string(dtype_name(c.quant.weights)) +
                (c.quant.activations == DType::int8 ? " w8a8" : ""));
    seen.insert("kv " + std::string(dtype_name(c.quant.kv)));
    bool shared_prefix = false;
    for (const StressRequest& q : c.requests) {
      const ServeRequest& r = q.request;
      if (exceeds_max_model_len(r, e)) {
        seen.insert("rejected: past max-model-len");
      } else if (must_reject(r, e)) {
        seen.insert("rejected: never fits the pool");
      } else {
        if (r.prompt_tokens + r.output_tokens == e.max_model_len) seen.insert("at max-model-len");
        if (r.prompt_tokens == 1) seen.insert("one-token prompt");
        if (r.prompt_tokens >= kContext / 2) seen.insert("prompt of half the context or more");
        if (r.output_tokens >= 1000) seen.insert("output of 1000 or more");
      }
      if (r.prompt_tokens > kContext) seen.insert("prompt past the context");
      shared_prefix = shared_prefix || r.prefix_id >= 0;
      if (sampling_draws(q.sampling)) seen.insert("seeded sampling");
      if (q.stop_after > 0) seen.insert("ended at a stop");
      if (q.cancel_after_s > 0) seen.insert("client gone");
    }
    if (shared_prefix) {
      seen.insert(e.prefix_caching ? "shared prefixes, caching on"
                                   : "shared prefixes, caching off");
    }
    std::vector<ServeRequest> lengths;
    for (const StressRequest& q : c.requests) lengths.push_back(q.request);
    SchedulerConfig plain = e;
    plain.speculative = {};
    if (simulate_serving(lengths, plain, Millisecond()).preemptions > 0) {
      seen.insert(e.preemption == PreemptionMode::swap ? "preempted, swap"
                                                       : "preempted, recompute");
    }
    if (e.max_num_seqs == 1) seen.insert("max-num-seqs 1");
    if (e.max_num_seqs >= 128) seen.insert("max-num-seqs 128 or more");
    if (e.max_num_batched_tokens <= 512) seen.insert("budget 512 or less");
    if (e.max_num_batched_tokens >= 4096) seen.insert("budget 4096 or more");
  }
  const std::vector<std::string> wanted = {"server path",
                                           "serve path",
                                           "policy chunked",
                                           "policy vllm",
                                           "drafting none",
                                           "drafting ngram",
                                           "drafting draft-itself",
                                           "drafting draft-first-layer",
                                           "drafting draft-small",
                                           "weights bf16",
                                           "weights int8",
                                           "weights int4",
                                           "weights fp8",
                                           "weights int8 w8a8",
                                           "kv bf16",
                                           "kv int8",
                                           "kv fp8",
                                           "rejected: past max-model-len",
                                           "rejected: never fits the pool",
                                           "at max-model-len",
                                           "one-token prompt",
                                           "prompt of half the context or more",
                                           "output of 1000 or more",
                                           "prompt past the context",
                                           "seeded sampling",
                                           "ended at a stop",
                                           "client gone",
                                           "shared prefixes, caching on",
                                           "shared prefixes, caching off",
                                           "preempted, swap",
                                           "preempted, recompute",
                                           "max-num-seqs 1",
                                           "max-num-seqs 128 or more",
                                           "budget 512 or less",
                                           "budget 4096 or more"};
  for (const std::string& feature : wanted) {
    EXPECT_TRUE(seen.count(feature)) << "no fixed seed draws: " << feature;
  }
}

// --- The harness itself -------------------------------------------------------------------

// A target whose logits change when it runs a batch of several sequences (the alone runs are
// unaffected): `perturb` rewrites each sequence's last row.
using Perturbation = std::function<void(std::span<float> row)>;

class BatchDependentBackend final : public ForwardingBackend {
 public:
  BatchDependentBackend(Backend& inner, Perturbation perturb)
      : ForwardingBackend(inner), perturb_(std::move(perturb)) {}
  ForwardResult forward(const ForwardBatch& batch) override {
    ForwardResult result = inner_.forward(batch);
    if (batch.sequences.size() > 1) {
      for (size_t i = 0; i < batch.sequences.size(); ++i) {
        float* row = result.logits.data() + (result.first_row[i + 1] - 1) * result.vocab_size;
        perturb_({row, static_cast<size_t>(result.vocab_size)});
      }
    }
    return result;
  }

 private:
  Perturbation perturb_;
};

class BatchDependentProvider : public BackendProvider {
 public:
  BatchDependentProvider(Perturbation perturb, double tolerance)
      : inner_(models()), perturb_(std::move(perturb)), tolerance_(tolerance) {}
  Backend& get(const BackendSpec& spec) override {
    Backend& backend = inner_.get(spec);
    if (spec.max_sequences == 1) return backend;  // the alone runs
    wrapped_.push_back(std::make_unique<BatchDependentBackend>(backend, perturb_));
    return *wrapped_.back();
  }
  double tolerance(const QuantConfig&) const override { return tolerance_; }

 private:
  CpuBackendProvider inner_;
  Perturbation perturb_;
  double tolerance_;
  std::vector<std::unique_ptr<Backend>> wrapped_;
};

// A bug: the top token moved to another.
void move_the_top(std::span<float> row) {
  const int32_t top = argmax(row);
  row[static_cast<size_t>(top + 1) % row.size()] = row[static_cast<size_t>(top)] + 1.0f;
}

// Rounding noise: the top two swapped where they lie within `within` of the row's scale.
Perturbation swap_near_ties(double within) {
  return [within](std::span<float> row) {
    const auto first = static_cast<size_t>(argmax(row));
    size_t second = first == 0 ? 1 : 0;
    float scale = 0;
    for (size_t t = 0; t < row.size(); ++t) {
      scale = std::max(scale, std::abs(row[t]));
      if (t != first && row[t] > row[second]) second = t;
    }
    if (row[first] - row[second] < within * scale) std::swap(row[first], row[second]);
  };
}

// Six greedy requests at once on the serve path, every one fitting: nothing to reject.
StressCase six_at_once() {
  StressCase c;
  c.seed = 5;
  c.context = kContext;
  c.config.policy = SchedulePolicy::chunked;
  c.config.block_size = 16;
  c.config.kv_blocks = 64;
  c.config.max_num_seqs = 8;
  c.config.max_num_batched_tokens = 256;
  c.config.max_model_len = kContext;
  for (int64_t i = 0; i < 6; ++i) {
    StressRequest q;
    q.request.prompt_tokens = 20 + 7 * i;
    q.request.output_tokens = 12;
    c.requests.push_back(q);
  }
  return c;
}

TEST(ServingStress, ATokenThatDependsOnTheBatchIsCaught) {
  const StressCase c = six_at_once();
  CpuBackendProvider honest(models());
  const StressReport clean = check_case(c, honest);
  EXPECT_TRUE(clean.failures.empty()) << clean.failures.front();
  EXPECT_EQ(clean.completed, 6);
  EXPECT_EQ(clean.greedy_checked, 6);

  BatchDependentProvider corrupting(move_the_top, 0.0);
  const StressReport caught = check_case(c, corrupting);
  ASSERT_FALSE(caught.failures.empty());
  EXPECT_NE(caught.failures.front().find("batched"), std::string::npos) << caught.failures.front();
  // A tolerance takes only near ties: a whole logit's move is far beyond it, even the GPU's
  // widest (fp8 weights and activations).
  BatchDependentProvider tolerant(move_the_top, 1e-2);
  EXPECT_FALSE(check_case(c, tolerant).failures.empty());
  QuantConfig widest;
  widest.weights = DType::fp8;
  widest.kv = DType::fp8;
  EXPECT_DOUBLE_EQ(gpu_batch_noise_tolerance(widest), 0.125);
  BatchDependentProvider widest_tolerance(move_the_top, gpu_batch_noise_tolerance(widest));
  EXPECT_FALSE(check_case(c, widest_tolerance).failures.empty());
}

// The GPU's tolerances by format, worked out from the factors the header gives.
TEST(ServingStress, GpuToleranceByFormat) {
  QuantConfig q;
  EXPECT_DOUBLE_EQ(gpu_batch_noise_tolerance(q), 0.015);  // bf16
  q.weights = DType::int4;
  EXPECT_DOUBLE_EQ(gpu_batch_noise_tolerance(q), 0.03);
  q.kv = DType::int8;
  EXPECT_DOUBLE_EQ(gpu_batch_noise_tolerance(q), 0.075);
  q.weights = DType::bf16;
  EXPECT_DOUBLE_EQ(gpu_batch_noise_tolerance(q), 0.0375);
  q.weights = DType::int8;
  q.activations = DType::int8;  // W8A8: the input's quantization step sets it, whatever the KV
  EXPECT_DOUBLE_EQ(gpu_batch_noise_tolerance(q), 0.125);
  q.kv = DType::bf16;
  EXPECT_DOUBLE_EQ(gpu_batch_noise_tolerance(q), 0.125);
}

// The GPU's rule on the CPU: top-two swaps within 0.5% of a row's scale, as bf16 rounding would
// make them, pass a tolerance of 1% (each counted as a near tie, the rest of that request not
// compared) and fail one of 0.1% where the gap was wider than that.
TEST(ServingStress, NearTiesPassOnlyWithinTheTolerance) {
  StressCase c = six_at_once();
  for (auto& q : c.requests) q.request.output_tokens = 60;
  BatchDependentProvider within(swap_near_ties(5e-3), 1e-2);
  const StressReport accepted = check_case(c, within);
  EXPECT_TRUE(accepted.failures.empty()) << accepted.failures.front();
  EXPECT_GT(accepted.near_ties, 0);
  EXPECT_GT(accepted.near_tie_peak, 0.0);  // each swapped gap under 0.5%, its bound 1%
  EXPECT_LE(accepted.near_tie_peak, 0.5);
  BatchDependentProvider beyond(swap_near_ties(5e-3), 1e-3);
  const StressReport refused = check_case(c, beyond);
  ASSERT_FALSE(refused.failures.empty());
  EXPECT_NE(refused.failures.front().find("noise bound"), std::string::npos)
      << refused.failures.front();
}

// six_at_once on the server path, sampled: 80 tokens each with `sampling`, seeds from
// `first_seed`, prompt ids (p × step + seed) mod the vocabulary.
StressCase sampled_on_the_server_path(uint64_t first_seed, int64_t step, SamplingParams sampling) {
  StressCase c = six_at_once();
  c.online = true;
  uint64_t seed = first_seed;
  for (auto& q : c.requests) {
    q.request.output_tokens = 80;
    for (int64_t p = 0; p < q.request.prompt_tokens; ++p) {
      q.prompt.push_back(static_cast<int32_t>((p * step + static_cast<int64_t>(seed)) % kVocab));
    }
    q.sampling = sampling;
    q.seed = seed++;
  }
  return c;
}

// The same for sampled requests on the server path: logits a little sharper when batched move
// the cumulative-probability boundaries a little; a draw that lands in between picks another
// token, accepted within the reach the tolerance gives and refused beyond it.
TEST(ServingStress, SampledDivergencesPassOnlyWithinTheTolerance) {
  const StressCase c = sampled_on_the_server_path(40, 37, {1.0, 0, 1.0});
  const auto sharper = [](std::span<float> row) {
    for (float& l : row) l *= 1.002f;
  };
  BatchDependentProvider within(sharper, 1e-2);
  const StressReport accepted = check_case(c, within);
  EXPECT_TRUE(accepted.failures.empty()) << accepted.failures.front();
  EXPECT_GT(accepted.near_ties, 0);
  EXPECT_EQ(accepted.sampled_checked, 6);
  BatchDependentProvider beyond(sharper, 1e-5);
  const StressReport refused = check_case(c, beyond);
  ASSERT_FALSE(refused.failures.empty());
  EXPECT_NE(refused.failures.front().find("reach"), std::string::npos) << refused.failures.front();
}

// Two near-equal tokens that swap places in the order of probability move each other's interval
// of cumulative probability by a whole token's share: a draw there is a near tie within the
// tolerance, and refused beyond it.
TEST(ServingStress, SampledSwapsOfNearEqualTokensPassOnlyWithinTheTolerance) {
  const StressCase c = sampled_on_the_server_path(90, 43, {0.5, 0, 1.0});
  BatchDependentProvider within(swap_near_ties(5e-3), 1e-2);
  const StressReport accepted = check_case(c, within);
  EXPECT_TRUE(accepted.failures.empty()) << accepted.failures.front();
  EXPECT_GT(accepted.near_ties, 0);
  BatchDependentProvider beyond(swap_near_ties(5e-3), 1e-4);
  EXPECT_FALSE(check_case(c, beyond).failures.empty());
}

// Rounding noise at top_k's edge: the k-th and (k+1)-th logits swapped where they lie within
// `within` of the row's scale, so the batched run may draw a token the alone run left out.
Perturbation swap_at_top_k_edge(size_t k, double within) {
  return [k, within](std::span<float> row) {
    std::vector<size_t> order(row.size());
    for (size_t t = 0; t < order.size(); ++t) order[t] = t;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t x, size_t y) { return row[x] > row[y]; });
    float scale = 0;
    for (float l : row) scale = std::max(scale, std::abs(l));
    const size_t kth = order[k - 1], next = order[k];
    if (row[kth] - row[next] < within * scale) std::swap(row[kth], row[next]);
  };
}

// A sampled token outside the alone run's top_k is a near tie only at the edge: swaps within
// 0.5% of the scale pass a tolerance of 1% and fail one of 0.01%.
TEST(ServingStress, SampledTokensBeyondTopKPassOnlyAtItsEdge) {
  const StressCase c = sampled_on_the_server_path(70, 41, {1.0, 3, 1.0});
  BatchDependentProvider within(swap_at_top_k_edge(3, 5e-3), 1e-2);
  const StressReport accepted = check_case(c, within);
  EXPECT_TRUE(accepted.failures.empty()) << accepted.failures.front();
  BatchDependentProvider beyond(swap_at_top_k_edge(3, 5e-3), 1e-4);
  const StressReport refused = check_case(c, beyond);
  ASSERT_FALSE(refused.failures.empty());
  EXPECT_NE(refused.failures.front().find("not at its edge"), std::string::npos)
      << refused.failures.front();
}

TEST(ServingStress, ARunThatDoesNotEndStopsAtItsBound) {
  const StressCase c = six_at_once();
  EXPECT_GT(iteration_bound(c), 6 * 12);
  CpuBackendProvider backends(models());
  const BatchedRun run = run_case(c, backends, /*iteration_limit=*/5);
  EXPECT_EQ(run.iterations, 5);
  EXPECT_NE(run.failure.find("no end after 5 iterations"), std::string::npos) << run.failure;
}

TEST(ServingStress, ABatchOverTheBackendsLimitsIsRefused) {
  CpuBackendProvider backends(models());
  Backend& limited =
      backends.get({ModelRole::target, {}, 16, 8, /*max_batch_tokens=*/10, 2, false});
  ForwardBatch batch;
  batch.sequences.push_back({std::vector<int32_t>(8, 1), 0, {0}, false});
  EXPECT_NO_THROW(limited.forward(batch));
  batch.sequences.push_back({std::vector<int32_t>(3, 1), 0, {1}, false});
  EXPECT_THROW(limited.forward(batch), std::invalid_argument);  // 11 tokens
  batch.sequences.resize(1);
  batch.sequences.push_back({{1}, 0, {1}, false});
  batch.sequences.push_back({{1}, 0, {2}, false});
  const std::vector<SampleSpec> specs(3);
  EXPECT_THROW(limited.forward_sample(batch, specs), std::invalid_argument);  // 3 sequences
}

}  // namespace
}  // namespace inferlab::engine::stress
