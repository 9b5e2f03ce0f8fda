// Speculative decoding: n-gram proposals and the verdict worked by hand, rejection sampling
// keeps the target's distribution (counted over many draws), greedy speculation gives plain
// greedy decoding's tokens on the CPU reference, a draft identical to the target is always
// accepted, greedy verification takes only the target's ids, and the speed-up formula.
#include "engine/speculative.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "counting_backend.hpp"
#include "engine/cpu/cpu_backend.hpp"
#include "engine/generate.hpp"
#include "engine/init_weights.hpp"
#include "engine/speculative_bench.hpp"
#include "serve/speculative_spec.hpp"
#include "test_support.hpp"
#include "util/error.hpp"

namespace inferlab::engine {
namespace {

LlamaConfig tiny() {
  return parse_llama_config(testing::tiny_llama_config(97, 256), "tiny", "test");
}

TEST(Speculative, NgramProposalTakesTheLatestEarlierOccurrenceOfTheLongestSuffix) {
  // Suffix [1, 2] occurs at 0 and at 4 (latest earlier): what followed at 4 is [9, 1, 2].
  const std::vector<int32_t> context{1, 2, 3, 4, 1, 2, 9, 1, 2};
  EXPECT_EQ(ngram_proposal(context, 2, 3, 1), (std::vector<int32_t>{9, 1}));
  EXPECT_EQ(ngram_proposal(context, 5, 3, 1), (std::vector<int32_t>{9, 1, 2}));
  // Only the 1-token suffix recurs: [7] after the 7 at index 1 comes 8.
  EXPECT_EQ(ngram_proposal(std::vector<int32_t>{5, 7, 8, 6, 7}, 3, 3, 1),
            (std::vector<int32_t>{8, 6, 7}));
  EXPECT_TRUE(ngram_proposal(std::vector<int32_t>{1, 2, 3}, 4, 3, 1).empty());
  EXPECT_TRUE(ngram_proposal(std::vector<int32_t>{4}, 4, 3, 1).empty());
}

TEST(Speculative, GreedyVerdictKeepsDraftTokensWhileTheyAreTheArgmax) {
  const std::vector<float> r0{0, 0, 5, 1}, r1{0, 1, 0, 4}, r2{0, 3, 0, 0};
  const std::vector<std::span<const float>> rows{r0, r1, r2};
  Xoshiro256 rng(1);
  const SamplingParams greedy;
  Verdict all = verify_draft(rows, std::vector<int32_t>{2, 3}, {}, greedy, rng);
  EXPECT_EQ(all.accepted, 2);
  EXPECT_EQ(all.tokens, (std::vector<int32_t>{2, 3, 1}));  // the last row adds its argmax
  Verdict one = verify_draft(rows, std::vector<int32_t>{2, 0}, {}, greedy, rng);
  EXPECT_EQ(one.accepted, 1);
  EXPECT_EQ(one.tokens, (std::vector<int32_t>{2, 3}));  // 0 rejected, row 1's argmax instead
  Verdict none = verify_draft(rows, std::vector<int32_t>{1, 3}, {}, greedy, rng);
  EXPECT_EQ(none.accepted, 0);
  EXPECT_EQ(none.tokens, (std::vector<int32_t>{2}));
  EXPECT_THROW(verify_draft(rows, std::vector<int32_t>{2}, {}, greedy, rng), std::invalid_argument);
}

TEST(Speculative, GreedyVerdictFromIdsIsTheVerdictFromTheirRows) {
  // The argmaxes of the rows above: 2, 3, 1.
  const std::vector<int32_t> ids{2, 3, 1};
  Verdict all = greedy_verdict(ids, std::vector<int32_t>{2, 3});
  EXPECT_EQ(all.accepted, 2);
  EXPECT_EQ(all.tokens, (std::vector<int32_t>{2, 3, 1}));
  Verdict one = greedy_verdict(ids, std::vector<int32_t>{2, 0});
  EXPECT_EQ(one.accepted, 1);
  EXPECT_EQ(one.tokens, (std::vector<int32_t>{2, 3}));
  Verdict none = greedy_verdict(ids, std::vector<int32_t>{1, 3});
  EXPECT_EQ(none.accepted, 0);
  EXPECT_EQ(none.tokens, (std::vector<int32_t>{2}));
  Verdict no_draft = greedy_verdict(std::vector<int32_t>{7}, std::vector<int32_t>{});
  EXPECT_EQ(no_draft.tokens, (std::vector<int32_t>{7}));
  EXPECT_THROW(greedy_verdict(ids, std::vector<int32_t>{2}), std::invalid_argument);
}

// The first token out of a round is distributed as the target's p, whatever q drafted it.
void expect_first_token_follows_target(bool point_mass) {
  const std::vector<double> p{0.5, 0.3, 0.2};
  const std::vector<double> q{0.2, 0.2, 0.6};
  std::vector<float> logits;
  for (double x : p) logits.push_back(static_cast<float>(std::log(x)));
  const std::vector<std::span<const float>> rows{logits, logits};
  std::vector<std::pair<int32_t, double>> q_dist{{2, 0.6}, {0, 0.2}, {1, 0.2}};
  SamplingParams params;
  params.temperature = 1.0;
  Xoshiro256 rng(42), draft_rng(7);
  const int trials = 200000;
  std::vector<int> counts(3, 0);
  for (int t = 0; t < trials; ++t) {
    int32_t drafted = 2;
    if (!point_mass) drafted = pick_token(q_dist, draft_rng.uniform());
    std::vector<std::vector<std::pair<int32_t, double>>> qs;
    if (!point_mass) qs.push_back(q_dist);
    Verdict v = verify_draft(rows, std::vector<int32_t>{drafted}, qs, params, rng);
    ++counts[static_cast<size_t>(v.tokens.front())];
  }
  for (size_t i = 0; i < 3; ++i) {
    const double freq = counts[i] / double(trials);
    const double sigma = std::sqrt(p[i] * (1 - p[i]) / trials);  // ≈ 0.001
    EXPECT_NEAR(freq, p[i], 5 * sigma) << "token " << i << (point_mass ? " (n-gram)" : " (model)");
  }
}

TEST(Speculative, RejectionSamplingKeepsTheTargetDistributionForADraftModel) {
  expect_first_token_follows_target(false);
}

TEST(Speculative, RejectionSamplingKeepsTheTargetDistributionForAPointMassDraft) {
  expect_first_token_follows_target(true);
}

struct Models {
  LlamaConfig config = tiny();
  CpuBackend target{config, random_llama_weights(config, 3), 16, 64};
};

GenerateOptions greedy_options(int64_t tokens) {
  GenerateOptions o;
  o.max_new_tokens = tokens;
  return o;
}

TEST(Speculative, GreedyNgramSpeculationGivesPlainGreedyTokens) {
  Models m;
  const std::vector<int32_t> prompt{5, 9, 13, 5, 9, 13, 5, 9, 13, 5, 9};
  const auto plain = generate(m.target, prompt, greedy_options(60));
  SpeculativeOptions ngram;
  ngram.k = 3;
  SpeculativeStats stats;
  const auto spec =
      generate_speculative(m.target, nullptr, prompt, greedy_options(60), ngram, {}, &stats);
  EXPECT_EQ(spec.tokens, plain.tokens);
  EXPECT_EQ(spec.finish_reason, "length");
  EXPECT_GT(stats.proposed, 0);
  EXPECT_EQ(stats.rounds + 1 + stats.accepted, 60);  // prefill token, one per round, accepted
}

TEST(Speculative, GreedyVerificationTakesOnlyIdsAndSamplingTakesTheRows) {
  Models m;
  const std::vector<int32_t> prompt{5, 9, 13, 5, 9, 13, 5, 9, 13, 5, 9};
  SpeculativeOptions ngram;
  ngram.k = 3;
  CountingBackend greedy_target(m.target);
  SpeculativeStats stats;
  const auto greedy =
      generate_speculative(greedy_target, nullptr, prompt, greedy_options(30), ngram, {}, &stats);
  EXPECT_EQ(greedy.tokens, generate(m.target, prompt, greedy_options(30)).tokens);
  EXPECT_EQ(greedy_target.all_logits_passes, 0);
  EXPECT_EQ(greedy_target.id_passes, stats.rounds);

  CountingBackend sampling_target(m.target);
  GenerateOptions sampling = greedy_options(30);
  sampling.sampling.temperature = 0.7;
  generate_speculative(sampling_target, nullptr, prompt, sampling, ngram, {}, &stats);
  EXPECT_EQ(sampling_target.all_logits_passes, stats.rounds);
  EXPECT_EQ(sampling_target.id_passes, 0);
}

TEST(Speculative, GreedyDraftModelSpeculationGivesPlainGreedyTokens) {
  Models m;
  CpuBackend other(m.config, random_llama_weights(m.config, 4), 16, 64);
  const std::vector<int32_t> prompt{1, 2, 3, 4, 5, 6, 7};
  const auto plain = generate(m.target, prompt, greedy_options(40));
  SpeculativeOptions with_model;
  with_model.drafter = SpeculativeOptions::Drafter::model;
  with_model.k = 2;
  SpeculativeStats stats;
  const auto spec =
      generate_speculative(m.target, &other, prompt, greedy_options(40), with_model, {}, &stats);
  EXPECT_EQ(spec.tokens, plain.tokens);
  EXPECT_GT(stats.draft_passes, 0);

  // A draft with the target's own weights is always right.
  CpuBackend same(m.config, random_llama_weights(m.config, 3), 16, 64);
  SpeculativeStats same_stats;
  const auto exact = generate_speculative(m.target, &same, prompt, greedy_options(40), with_model,
                                          {}, &same_stats);
  EXPECT_EQ(exact.tokens, plain.tokens);
  EXPECT_EQ(same_stats.accepted, same_stats.proposed);
  EXPECT_EQ(same_stats.rounds, 13);  // 39 tokens after the first, 3 per round (k = 2)
}

TEST(Speculative, SampledDraftEqualToTheTargetIsAlwaysAccepted) {
  Models m;
  CpuBackend same(m.config, random_llama_weights(m.config, 3), 16, 64);
  GenerateOptions o = greedy_options(30);
  o.sampling.temperature = 0.8;
  o.seed = 11;
  SpeculativeOptions with_model;
  with_model.drafter = SpeculativeOptions::Drafter::model;
  with_model.k = 4;
  SpeculativeStats stats;
  const auto out = generate_speculative(m.target, &same, std::vector<int32_t>{3, 1, 4}, o,
                                        with_model, {}, &stats);
  EXPECT_EQ(out.tokens.size(), 30u);
  EXPECT_EQ(stats.accepted, stats.proposed);  // p = q: min(1, p/q) = 1 for every draft token
}

TEST(Speculative, StopTokenEndsTheSequenceInsideARound) {
  Models m;
  const std::vector<int32_t> prompt{1, 2, 3, 4, 5, 6, 7};
  const auto plain = generate(m.target, prompt, greedy_options(40));
  GenerateOptions o = greedy_options(40);
  o.stop_token_ids = {plain.tokens[6]};
  const auto plain_stop = generate(m.target, prompt, o);
  CpuBackend same(m.config, random_llama_weights(m.config, 3), 16, 64);
  SpeculativeOptions with_model;
  with_model.drafter = SpeculativeOptions::Drafter::model;
  with_model.k = 4;
  const auto spec = generate_speculative(m.target, &same, prompt, o, with_model);
  EXPECT_EQ(spec.tokens, plain_stop.tokens);
  EXPECT_EQ(spec.finish_reason, "stop");
}

TEST(Speculative, RefusesADraftWithAnotherVocabulary) {
  Models m;
  nlohmann::json j = {{"architectures", {"LlamaForCausalLM"}},
                      {"model_type", "llama"},
                      {"hidden_size", 32},
                      {"intermediate_size", 64},
                      {"num_hidden_layers", 1},
                      {"num_attention_heads", 4},
                      {"num_key_value_heads", 2},
                      {"head_dim", 8},
                      {"vocab_size", 50},
                      {"max_position_embeddings", 256}};
  const LlamaConfig small = parse_llama_config(j, "small", "test");
  CpuBackend other(small, random_llama_weights(small, 1), 16, 64);
  SpeculativeOptions with_model;
  with_model.drafter = SpeculativeOptions::Drafter::model;
  EXPECT_THROW(generate_speculative(m.target, &other, std::vector<int32_t>{1, 2}, greedy_options(5),
                                    with_model),
               InputError);
}

TEST(Speculative, SpeedupFormulaByHand) {
  // α = 0.5, k = 2: (1 − 0.125) / 0.5 = 1.75 tokens per round; cost 2 × 0.1 + 1.2 = 1.4.
  EXPECT_NEAR(speculative_speedup(0.5, 2, 0.1, 1.2), 1.25, 1e-12);
  EXPECT_NEAR(speculative_speedup(1.0, 4, 0.0, 1.0), 5.0, 1e-12);
  EXPECT_NEAR(speculative_speedup(0.0, 4, 0.0, 1.0), 1.0, 1e-12);
  EXPECT_THROW(speculative_speedup(1.5, 4, 0.1, 1.0), std::invalid_argument);
}

TEST(Speculative, ParsesItsSpecAndRefusesBadOnes) {
  std::string draft;
  auto o = parse_speculative("ngram,k=5,n=2", draft);
  EXPECT_EQ(o.drafter, SpeculativeOptions::Drafter::ngram);
  EXPECT_EQ(o.k, 5);
  EXPECT_EQ(o.ngram_max, 2);
  EXPECT_TRUE(draft.empty());
  o = parse_speculative("draft=llama-3.2-1b,k=3", draft);
  EXPECT_EQ(o.drafter, SpeculativeOptions::Drafter::model);
  EXPECT_EQ(o.k, 3);
  EXPECT_EQ(draft, "llama-3.2-1b");
  for (const char* bad :
       {"", "eagle,k=2", "ngram,k=0", "ngram,k=17", "ngram,k=x", "draft=,k=2", "ngram,q=1",
        "draft=m,n=2", "ngram,k=4,propose=2", "ngram,k=4,accept=0.5"}) {
    EXPECT_THROW(parse_speculative(bad, draft), InputError) << bad;
  }
}

// The simulator's items: accept= and propose= (the engine refuses both, above).
TEST(Speculative, TheSimulatorsProposalLengthIsInZeroToK) {
  const SpeculativeSpec spec = parse_speculative_spec("ngram,k=4,accept=0.6,propose=2.85");
  EXPECT_EQ(spec.k, 4);
  EXPECT_DOUBLE_EQ(*spec.acceptance, 0.6);
  EXPECT_DOUBLE_EQ(*spec.proposed_mean, 2.85);
  EXPECT_DOUBLE_EQ(*parse_speculative_spec("ngram,propose=4").proposed_mean, 4.0);  // k = 4
  EXPECT_FALSE(parse_speculative_spec("ngram,k=4").proposed_mean.has_value());
  for (const char* bad : {"ngram,k=4,propose=0", "ngram,k=4,propose=4.5", "ngram,k=2,propose=3",
                          "ngram,propose=-1", "ngram,propose=x", "ngram,propose="}) {
    EXPECT_THROW(parse_speculative_spec(bad), InputError) << bad;
  }
}

TEST(Speculative, MeasuredCostsOnTheCpuGiveASpeedupTable) {
  Models m;
  CpuBackend draft(m.config, random_llama_weights(m.config, 4), 16, 64);
  SpeculativeOptions with_model;
  with_model.drafter = SpeculativeOptions::Drafter::model;
  with_model.k = 3;
  const auto costs = measure_speculative_costs(m.target, &draft, with_model, 40, 3, 1);
  EXPECT_EQ(costs.decode_step.samples, 3);
  EXPECT_EQ(costs.verify.samples, 3);
  EXPECT_EQ(costs.draft_step.samples, 3);
  EXPECT_FALSE(costs.device_timed);
  // Without a device timer the host's clock is the only one: the wall figures are the same.
  EXPECT_DOUBLE_EQ(costs.decode_step_wall.median_s, costs.decode_step.median_s);
  EXPECT_DOUBLE_EQ(costs.verify_wall.median_s, costs.verify.median_s);
  EXPECT_DOUBLE_EQ(costs.draft_step_wall.median_s, costs.draft_step.median_s);
  // Whole rounds: three draft steps and the verification, so longer than the verification alone.
  EXPECT_EQ(costs.round_wall.samples, 3);
  EXPECT_EQ(costs.verify_in_round.samples, 3);
  EXPECT_GT(costs.round_wall.min_s, costs.verify_in_round_wall.min_s);
  ASSERT_EQ(costs.speedup_at_acceptance.size(), 6u);
  EXPECT_LT(costs.speedup_at_acceptance.front().second, costs.speedup_at_acceptance.back().second);
  EXPECT_THROW(measure_speculative_costs(m.target, &draft, with_model, 5000, 3, 1), InputError);
}

}  // namespace
}  // namespace inferlab::engine
