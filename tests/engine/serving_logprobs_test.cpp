// Logprobs through serve's scheduler and the engine's executor on the CPU reference: a prompt's
// scores and the generated tokens' are the log-softmax of the teacher-forced logits of the same
// tokens (worked out apart, by teacher_forced_logits), however the prompt is chunked, split into
// passes, batched, speculated or preempted; requests without logprobs keep their tokens.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/cpu/cpu_backend.hpp"
#include "engine/init_weights.hpp"
#include "engine/logprobs.hpp"
#include "engine/serving_executor.hpp"
#include "engine/teacher_forced.hpp"
#include "serve/scheduler.hpp"
#include "test_support.hpp"

namespace inferlab::engine {
namespace {

constexpr int64_t kVocab = 97;

LlamaConfig tiny() {
  return parse_llama_config(testing::tiny_llama_config(kVocab, 256), "tiny", "test");
}

std::unique_ptr<CpuBackend> backend(int64_t blocks = 64) {
  const LlamaConfig model = tiny();
  return std::make_unique<CpuBackend>(model, random_llama_weights(model, 3), 8, blocks);
}

std::vector<int32_t> prompt_of(int64_t length, int32_t salt) {
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < length; ++i)
    ids.push_back(static_cast<int32_t>((salt + 13 * i) % kVocab));
  return ids;
}

struct Job {
  std::vector<int32_t> prompt;
  int64_t output = 6;
  LogprobRequest logprobs;
  SamplingParams sampling{};
  uint64_t seed = 5;
};

struct Served {
  std::vector<int32_t> tokens;
  std::vector<PositionLogprobs> logprobs, prompt;
  bool prompt_scored = false;
};

// The jobs served together (all arriving at once) as the server's loop serves them.
std::vector<Served> serve(const std::vector<Job>& jobs, SchedulerConfig config,
                          int64_t max_logit_rows = 0, int64_t blocks = 64,
                          int64_t* preemptions = nullptr) {
  auto cpu = backend(blocks);
  config.block_size = 8;
  config.kv_blocks = blocks;
  ServingExecutor executor(*cpu);
  if (max_logit_rows > 0) executor.set_max_logit_rows(max_logit_rows);
  Scheduler scheduler({}, config);
  for (const Job& job : jobs) {
    ServeRequest request;
    request.prompt_tokens = static_cast<int64_t>(job.prompt.size());
    request.output_tokens = job.output;
    const int64_t id = scheduler.add(request, 0.0);
    executor.add_request(id, job.prompt, job.sampling, job.seed, job.logprobs);
  }
  double now = 0;
  for (int guard = 0; !scheduler.finished() && guard < 10000; ++guard) {
    const ScheduledIteration iteration = scheduler.schedule();
    const IterationOutcome outcome = executor.execute(iteration);
    now += std::max(outcome.duration_s, 1e-6);
    scheduler.update(iteration, outcome, now);
  }
  EXPECT_TRUE(scheduler.finished());
  if (preemptions) *preemptions = scheduler.result_so_far().preemptions;
  std::vector<Served> out;
  for (size_t i = 0; i < jobs.size(); ++i) {
    Served s{executor.generated(i), executor.generated_logprobs(i), {}, false};
    if (const auto* scored = executor.prompt_logprobs(i)) {
      s.prompt = *scored;
      s.prompt_scored = true;
    }
    out.push_back(std::move(s));
  }
  return out;
}

// log_softmax of every teacher-forced row of prompt + generated, on a fresh backend.
std::vector<std::vector<float>> reference_rows(const std::vector<int32_t>& ids) {
  auto cpu = backend();
  BlockTable table;
  for (int32_t b = 0; b < 64; ++b) table.push_back(b);
  const auto count = static_cast<int64_t>(ids.size());
  const std::vector<float> logits = teacher_forced_logits(*cpu, ids, count, table);
  std::vector<std::vector<float>> rows;
  for (int64_t r = 0; r < count; ++r) {
    std::vector<float> row(logits.begin() + r * kVocab, logits.begin() + (r + 1) * kVocab);
    std::vector<float> lp(kVocab);
    log_softmax(row, lp);
    rows.push_back(std::move(lp));
  }
  return rows;
}

// One position against the reference row: the token's logprob and the top k, sorted, with the
// reference's values (ties aside, the reference's k largest).
void expect_position(const PositionLogprobs& got, int32_t token, const std::vector<float>& ref,
                     int k, const std::string& where) {
  EXPECT_EQ(got.chosen.token, token) << where;
  EXPECT_NEAR(got.chosen.logprob, ref[static_cast<size_t>(token)], 2e-5) << where;
  ASSERT_EQ(got.top.size(), static_cast<size_t>(k)) << where;
  for (size_t i = 0; i < got.top.size(); ++i) {
    EXPECT_NEAR(got.top[i].logprob, ref[static_cast<size_t>(got.top[i].token)], 2e-5) << where;
    if (i > 0) EXPECT_GE(got.top[i - 1].logprob, got.top[i].logprob) << where;
  }
  if (k > 0) {
    std::vector<float> sorted = ref;
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    EXPECT_NEAR(got.top.back().logprob, sorted[static_cast<size_t>(k - 1)], 2e-5) << where;
  }
}

// Every logprob a served request reports, against the reference of its own tokens.
void expect_matches_reference(const Job& job, const Served& served, const std::string& where) {
  std::vector<int32_t> ids = job.prompt;
  ids.insert(ids.end(), served.tokens.begin(), served.tokens.end());
  const auto ref = reference_rows(ids);
  const size_t p = job.prompt.size();
  if (job.logprobs.prompt) {
    ASSERT_TRUE(served.prompt_scored) << where;
    ASSERT_EQ(served.prompt.size(), p - 1) << where;
    for (size_t q = 0; q + 1 < p; ++q) {
      expect_position(served.prompt[q], job.prompt[q + 1], ref[q], job.logprobs.top,
                      where + " prompt position " + std::to_string(q + 1));
    }
  }
  if (job.logprobs.sampled) {
    ASSERT_EQ(served.logprobs.size(), served.tokens.size()) << where;
    for (size_t k = 0; k < served.tokens.size(); ++k) {
      expect_position(served.logprobs[k], served.tokens[k], ref[p - 1 + k], job.logprobs.top,
                      where + " generated token " + std::to_string(k));
    }
  }
}

std::vector<Job> mixed_jobs() {
  const LogprobRequest echo{true, true, 5}, sampled{true, false, 3};
  return {{prompt_of(40, 1), 6, echo},
          {prompt_of(23, 2), 9, {}},  // no logprobs, batched beside the others
          {prompt_of(9, 3), 5, sampled},
          {prompt_of(1, 4), 4, echo},                       // one prompt token: nothing to score
          {prompt_of(30, 5), 7, echo, {0.8, 0, 1.0}, 17}};  // sampled at temperature 0.8
}

SchedulerConfig chunked(int64_t budget) {
  SchedulerConfig config;
  config.policy = SchedulePolicy::chunked;
  config.max_num_batched_tokens = budget;
  return config;
}

TEST(ServingLogprobs, EchoAndSampledLogprobsAreLogSoftmaxOfTeacherForcedRows) {
  const std::vector<Job> jobs = mixed_jobs();
  const std::vector<Served> whole = serve(jobs, chunked(512));
  for (size_t i = 0; i < jobs.size(); ++i) {
    EXPECT_EQ(static_cast<int64_t>(whole[i].tokens.size()), jobs[i].output) << i;
    expect_matches_reference(jobs[i], whole[i], "request " + std::to_string(i));
    if (!jobs[i].logprobs.any()) {
      EXPECT_TRUE(whole[i].logprobs.empty());
      EXPECT_FALSE(whole[i].prompt_scored);
    }
  }
  // Greedy requests: each token is its row's most likely, and its logprob is top[0]'s exactly.
  for (const PositionLogprobs& p : whole[0].logprobs) {
    EXPECT_EQ(p.chosen.token, p.top[0].token);
    EXPECT_EQ(p.chosen.logprob, p.top[0].logprob);
  }
  // The request without logprobs has the tokens it has alone (the fast path).
  EXPECT_EQ(serve({jobs[1]}, chunked(512))[0].tokens, whole[1].tokens);
}

TEST(ServingLogprobs, ChunkedSplitSpeculatedOrPreemptedTheLogprobsStay) {
  const std::vector<Job> jobs = mixed_jobs();
  const std::vector<Served> reference = serve(jobs, chunked(512));
  SchedulerConfig speculative = chunked(32);
  speculative.speculative.k = 3;
  SchedulerConfig whole_prompts;  // vLLM's policy: whole prompts, then decodes
  whole_prompts.policy = SchedulePolicy::vllm;
  SchedulerConfig swap = chunked(24);
  swap.preemption = PreemptionMode::swap;
  struct Case {
    std::string name;
    SchedulerConfig config;
    int64_t max_rows = 0, blocks = 64;
  };
  const std::vector<Case> cases = {
      {"chunks of 16 tokens", chunked(16)},
      {"passes of 7 logit rows", chunked(512), 7},
      {"chunks of 16 in passes of 5 rows", chunked(16), 5},
      {"n-gram speculation", speculative},
      {"vllm policy", whole_prompts, 11},
      {"recompute in 8 blocks", chunked(24), 0, 8},
      {"swap in 8 blocks", swap, 0, 8},
  };
  for (const Case& c : cases) {
    int64_t preemptions = 0;
    const std::vector<Served> served = serve(jobs, c.config, c.max_rows, c.blocks, &preemptions);
    if (c.blocks < 64) EXPECT_GT(preemptions, 0) << c.name;
    for (size_t i = 0; i < jobs.size(); ++i) {
      const std::string where = c.name + ", request " + std::to_string(i);
      // Greedy tokens never change; sampled ones may under speculation (its verdicts draw).
      if (jobs[i].sampling.temperature == 0 || c.config.speculative.k == 0) {
        EXPECT_EQ(served[i].tokens, reference[i].tokens) << where;
      }
      expect_matches_reference(jobs[i], served[i], where);
    }
  }
}

TEST(ServingLogprobs, AScoredPromptThatSkipsPositionsIsRefused) {
  // A prefix from the cache leaves positions without rows: the executor says so rather than
  // report zeros (the server keeps such requests out of the cache).
  auto cpu = backend();
  ServingExecutor executor(*cpu);
  SchedulerConfig config = chunked(512);
  config.block_size = 8;
  config.kv_blocks = 64;
  config.prefix_caching = true;
  Scheduler scheduler({}, config);
  const std::vector<int32_t> prompt = prompt_of(20, 9);
  ServeRequest request;
  request.prompt_tokens = 20;
  request.output_tokens = 2;
  request.block_keys = {1, 2};  // two full blocks of 8
  // The first request fills the cache, the second finds its 16 positions there.
  executor.add_request(scheduler.add(request, 0.0), prompt, {}, 1);
  double now = 0;
  while (!scheduler.finished()) {
    const ScheduledIteration it = scheduler.schedule();
    scheduler.update(it, executor.execute(it), now += 1e-3);
  }
  executor.add_request(scheduler.add(request, now), prompt, {}, 1, {false, true, 0});
  const ScheduledIteration it = scheduler.schedule();
  ASSERT_EQ(it.work.size(), 1u);
  ASSERT_GT(it.work[0].seq->computed, 0);
  EXPECT_THROW(executor.execute(it), std::logic_error);
}

}  // namespace
}  // namespace inferlab::engine
