#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/backend.hpp"
#include "engine/kv_swap_space.hpp"
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
class ServingExecutor : public Executor {
 public:
  ServingExecutor(Backend& backend, const std::vector<ServeRequest>& requests, uint64_t seed,
                  int64_t ngram_max = 3);
  // No requests yet: the server adds them as they come.
  explicit ServingExecutor(Backend& backend, int64_t ngram_max = 3);
  // Request `id` (the scheduler's id: the next index) with its prompt ids and sampling.
  void add_request(int64_t id, std::vector<int32_t> prompt, const SamplingParams& sampling,
                   uint64_t seed);
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
    std::vector<std::vector<int32_t>> drafts;
    BatchDrafter::Proposals proposals;  // the draft model's (empty without one)
    bool speculating = false;           // some item carries drafts
  };
  PlannedPass plan_pass(const ScheduledIteration& iteration);
  // The tokens each item emits: sampled on the backend (no drafts), or the drafts' verdicts
  // over logits brought to the host.
  std::vector<std::vector<int32_t>> run_sampled(const ScheduledIteration& iteration,
                                                const PlannedPass& pass);
  std::vector<std::vector<int32_t>> run_verified(const ScheduledIteration& iteration,
                                                 const PlannedPass& pass);
  // The backend's kernel profile of the pass just run, with the iteration's shape.
  void record_kernels(const ScheduledIteration& iteration);

  struct Record {
    std::vector<int32_t> prompt, generated;
    SamplingParams sampling;  // greedy for drawn workloads
    Xoshiro256 rng;           // its sampling draws
    bool released = false;
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
  bool profile_kernels_ = false;
  std::unique_ptr<BatchDrafter> drafter_;  // null: n-gram drafts
  std::vector<IterationKernels> kernel_profiles_;
};

}  // namespace inferlab::engine
