#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/backend.hpp"
#include "engine/kv_swap_space.hpp"
#include "engine/logprobs.hpp"
#include "engine/sampling.hpp"
#include "engine/serving_drafter.hpp"
#include "serve/executor.hpp"
#include "util/rng.hpp"

namespace inferlab::engine {

// The engine's executor for serve's scheduler (DESIGN: one scheduler, two executors): each
// iteration the scheduler forms runs as one forward pass of the backend over every scheduled
// sequence's new tokens, through the block tables of the scheduler's block manager (whose pool
// is the backend's KV pool), and takes as long as it took on the wall clock.
//
// Requests carry lengths, not text: each request's prompt ids are drawn from (seed, request
// index), except that a shared prefix (prefix_id ≥ 0) has the same ids in every request with
// that id, drawn from (seed, prefix id) — so the KV blocks that prefix caching shares hold the
// same tokens. Tokens are picked greedily.
//
// With the scheduler's speculative k (a decode step of 1 + k tokens), each such sequence's k
// draft tokens come from n-gram lookup over its own tokens (padded with its last token where the
// lookup finds fewer, so the target always scores 1 + k positions, as the simulator prices it);
// the target scores them in the iteration's one forward pass and the verdict keeps the drafts
// the target accepts (greedy: those that match its argmax), then its own token: the same tokens
// as without speculation. With a draft model (set_draft_model), the drafts are its proposals
// instead, k batched passes of it per iteration (engine/serving_drafter.hpp), which count in the
// iteration's time; sampling requests draw them from the draft's distribution and the verdict
// keeps the target's distribution (verify_draft).
//
// The server's requests carry real prompts instead: add_request() gives a request's ids, its
// sampling parameters and its seed (one generator per request, so a request's tokens do not
// depend on what else is batched with it).
//
// Logprobs (engine/logprobs.hpp): a request may ask for its generated tokens' logprobs and for
// its prompt's (echo). An iteration with such a request runs on the host's logits, as one with
// sampled drafts does: forward() brings the rows to the host (every row of a prompt chunk whose
// tokens are scored, the last row otherwise), the tokens are picked there with the same draws,
// and the logprobs are worked out from the rows before they are dropped. An iteration without
// one keeps the fast path, where only ids come back: forward_sample, or with greedy drafts
// forward_sample_rows (the argmax of each of a drafting item's 1 + k rows, on the backend's
// device, gives its verdict). A pass asks for at most max_logit_rows
// rows (their host copy is rows x vocab x 4 bytes); a longer scored prompt chunk runs as several
// consecutive passes of the same sequence. A prompt is scored only when its chunks start at
// position 0: the caller keeps such a request out of the prefix cache.
class ServingExecutor : public Executor {
 public:
  ServingExecutor(Backend& backend, const std::vector<ServeRequest>& requests, uint64_t seed,
                  int64_t ngram_max = 3);
  // No requests yet: the server adds them as they come.
  explicit ServingExecutor(Backend& backend, int64_t ngram_max = 3);
  // Request `id` (the scheduler's id: the next index) with its prompt ids and sampling.
  void add_request(int64_t id, std::vector<int32_t> prompt, const SamplingParams& sampling,
                   uint64_t seed, const LogprobRequest& logprobs = {});
  // Lets go of a finished request: its record goes once every request before it is released
  // too (a long-running server holds only what is in flight). Its id is then no longer valid.
  void release(int64_t id);
  // Drafts with `draft` (kept by the caller) instead of n-gram lookup: InputError unless it has
  // the target's vocabulary and block size and at least its KV blocks.
  void set_draft_model(Backend& draft);

  IterationOutcome execute(const ScheduledIteration& iteration) override;

  // Request i's prompt ids and the tokens generated for it, in order.
  const std::vector<int32_t>& prompt(size_t request) const { return at(request).prompt; }
  const std::vector<int32_t>& generated(size_t request) const { return at(request).generated; }
  // With logprobs.sampled: one entry per generated token, in order (else empty).
  const std::vector<PositionLogprobs>& generated_logprobs(size_t request) const {
    return at(request).generated_logprobs;
  }
  // With logprobs.prompt, once the whole prompt is scored (by the time its first token is
  // generated): entry p - 1 scores prompt token p (the first token has no logprob). Else null.
  const std::vector<PositionLogprobs>* prompt_logprobs(size_t request) const {
    const Record& r = at(request);
    return r.logprobs.prompt && r.prompt_scored ? &r.prompt_logprobs : nullptr;
  }
  // Logit rows one forward pass brings to the host at most (default: 256 MiB of them, at least
  // 64 rows); tests set it small to split prompts.
  void set_max_logit_rows(int64_t rows) { max_logit_rows_ = rows; }
  int64_t draft_passes() const { return drafter_ ? drafter_->passes() : 0; }

  // With `on`, every forward pass is profiled (Backend::set_profiling: a CUDA backend then runs
  // decode-only iterations eagerly too, so iterations take longer) and its GPU time per kernel
  // class kept, one record per iteration.
  struct IterationKernels {
    int64_t iteration = 0;
    int64_t prefill_tokens = 0, decode_seqs = 0;
    std::vector<KernelClassTime> classes;
  };
  void profile_kernels(bool on) { profile_kernels_ = on; }
  const std::vector<IterationKernels>& kernel_profiles() const { return kernel_profiles_; }

 private:
  // Token at `position` of request i: its prompt, then what it generated.
  int32_t token_at(size_t request, int64_t position) const;
  // k draft tokens for request i from n-gram lookup over its prompt and output.
  std::vector<int32_t> draft(size_t request, int64_t k);
  // The draft model's proposals for every work item (in order) of the iteration.
  BatchDrafter::Proposals model_drafts(const ScheduledIteration& iteration);

  // execute's steps. The iteration as one forward batch: each work item's chunk (a decode with
  // drafts carries its last token, then the drafts, and asks for every row's logits), whether
  // its last row yields a token, and the drafts.
  struct PlannedPass {
    ForwardBatch batch;
    std::vector<bool> samples;
    std::vector<bool> scores_prompt;  // a prompt chunk whose rows score the prompt's tokens
    std::vector<std::vector<int32_t>> drafts;
    BatchDrafter::Proposals proposals;  // the draft model's (empty without one)
    bool speculating = false;           // some item carries drafts
    bool host_logits = false;           // sampled drafts, or some item wants logprobs
  };
  PlannedPass plan_pass(const ScheduledIteration& iteration);
  // What each item emits (its tokens and, where asked, their logprobs) and the device time.
  struct Emitted {
    std::vector<std::vector<int32_t>> tokens;
    std::vector<std::vector<PositionLogprobs>> logprobs;
    double device_s = -1;  // negative: not measured (the CPU)
  };
  // Sampled on the backend (the fast path: no logprobs, no sampled drafts), or from logits
  // brought to the host (sampled drafts' verdicts, logprobs), in one or more passes.
  Emitted run_sampled(const ScheduledIteration& iteration, const PlannedPass& pass);
  Emitted run_on_host(const ScheduledIteration& iteration, const PlannedPass& pass);
  // The prompt logprobs a piece's rows give (rows: one per token of a scored prompt chunk).
  void score_prompt(int64_t request, const SequenceChunk& piece,
                    std::span<const std::span<const float>> rows);
  // Item i's tokens (and their logprobs) from its last piece's rows.
  void pick_on_host(size_t i, int64_t request, const PlannedPass& pass,
                    std::span<const std::span<const float>> rows, Emitted& out);
  // The backend's kernel profile of the pass just run, with the iteration's shape.
  void record_kernels(const ScheduledIteration& iteration);

  struct Record {
    std::vector<int32_t> prompt, generated;
    SamplingParams sampling;  // greedy for drawn workloads
    Xoshiro256 rng;           // its sampling draws
    bool released = false;
    LogprobRequest logprobs{};
    std::vector<PositionLogprobs> generated_logprobs{}, prompt_logprobs{};
    int64_t prompt_next = 0;     // the next prompt position to score
    bool prompt_scored = false;  // every prompt_logprobs entry is filled
  };
  const Record& at(size_t request) const { return records_[request - first_id_]; }
  Record& at(size_t request) { return records_[request - first_id_]; }

  Backend& backend_;
  // Carries out the iteration's swaps in order; the seconds they took.
  double apply_swaps(const std::vector<KvSwap>& swaps);

  KvSwapSpace swap_space_{backend_};  // swapped-out sequences' KV
  std::deque<Record> records_;        // requests first_id_, first_id_ + 1, ...
  size_t first_id_ = 0;
  int64_t forward_passes_ = 0;  // the kernel profiles' iteration numbers
  int64_t ngram_max_;
  int64_t max_logit_rows_;
  bool profile_kernels_ = false;
  std::unique_ptr<BatchDrafter> drafter_;  // null: n-gram drafts
  std::vector<IterationKernels> kernel_profiles_;
};

}  // namespace inferlab::engine
