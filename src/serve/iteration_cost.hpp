#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "cost/cost_model.hpp"
#include "hw/hardware_spec.hpp"
#include "model/model_config.hpp"
#include "predict/framework.hpp"
#include "predict/options.hpp"
#include "predict/step_predictor.hpp"

namespace inferlab {

// One sequence's share of an iteration: `new_tokens` tokens computed (a prefill chunk, one
// decode token, or k + 1 tokens verified under speculation) attending `context` tokens (the
// new ones included); `samples` when the iteration ends with a token sampled for it.
struct ScheduledSeq {
  int64_t new_tokens = 1;
  int64_t context = 1;
  bool samples = true;
  bool decode = false;  // a decoding sequence (one token, or k + 1 under speculation)
};

// Everything one engine iteration runs.
struct IterationBatch {
  std::vector<ScheduledSeq> seqs;
  int speculative_k = 0;      // draft tokens proposed per decoding sequence (0: none)
  int64_t drafting_seqs = 0;  // sequences the draft model runs for
  int64_t draft_context = 0;  // their mean context
  double swap_bytes = 0.0;    // KV moved between device and host this iteration
  int64_t total_tokens() const {
    int64_t t = 0;
    for (const auto& s : seqs) t += s.new_tokens;
    return t;
  }
};

// Time of one engine iteration. Tests use hand-worked implementations; the simulator uses
// PredictedIterationCost.
class IterationCost {
 public:
  virtual ~IterationCost() = default;
  virtual double time_s(const IterationBatch& batch) const = 0;
};

// Iterations priced with inferlab's step predictor through any cost model (roofline,
// calibrated, tilesim): the operators that do not depend on context (projections, norms, MLP,
// collectives) are priced once per total token count of the iteration (as vLLM flattens the
// batch into one token dimension), attention per group of sequences at their own context, the
// LM head and sampling per sampled sequence, and the draft model's pass over the prefill chunks
// and its k decode steps when speculating with one. Memoised: a 10,000-request simulation prices a
// few thousand distinct shapes.
class PredictedIterationCost : public IterationCost {
 public:
  PredictedIterationCost(const ModelConfig& model, const HardwareSpec& hardware,
                         const CostModel& cost, const PredictOptions& options,
                         const HostOverhead& host, const ModelConfig* draft_model = nullptr,
                         double host_link_bps = 25e9);
  PredictedIterationCost(const PredictedIterationCost&) = delete;
  PredictedIterationCost& operator=(const PredictedIterationCost&) = delete;
  double time_s(const IterationBatch& batch) const override;
  // The inferlab engine's graphs are captured for batches padded to a power of two, at most its
  // --max-num-seqs: a graphed decode iteration computes (and is priced for) the padded rows.
  void set_graph_batch_limit(int64_t max_num_seqs) { graph_batch_limit_ = max_num_seqs; }

  // The parts of time_s, exposed for tests.
  // Context-free ops and host cost, per token count; `graphed`: launched as a CUDA graph (where
  // graphs are on), else eagerly. The inferlab engine replays graphs only for iterations of one
  // decode token per sequence; every other iteration runs eagerly.
  // `experts`: the experts a mixture of experts' rows reach (StepShape::routed_experts; 0: as
  // one sequence of `tokens`); only MoE models read it.
  double flat_s(int64_t tokens, bool graphed = true, double experts = 0.0) const;
  double sampled_s(int64_t seqs) const;  // LM head, gather and sampling
  // `token_view`: the engine's by-token attention of a few tokens a sequence (speculative
  // verification), whose decode kernel reads the cache after its grid wait
  // (engine/cuda/attention_decode_common.cuh's cache_before_wait), not before it.
  double attention_s(int64_t seqs, int64_t new_tokens, int64_t context,
                     bool token_view = false) const;
  double draft_step_s(int64_t seqs, int64_t context) const;
  double draft_prefill_s(int64_t tokens) const;  // the draft's pass over prefill chunks
  // The inferlab engine's flash-decode kernel over `kernel_seqs` sequences (a graph's padded
  // rows) whose longest context is `longest_context`: what that sequence's CTAs take to stream
  // their partitions alone (model/engine_decode_plan.hpp), every layer. 0 where the cost model
  // does not price it (EngineCosts::decode_cta_bps).
  double decode_straggler_s(int64_t kernel_seqs, int64_t longest_context) const;

 private:
  int64_t graph_rows(int64_t seqs) const;  // a graphed decode batch's padded rows

  const ModelConfig model_;
  std::unique_ptr<ModelConfig> draft_model_;
  StepContext context_, draft_context_;
  StepContext eager_context_, draft_eager_context_;  // the two without CUDA graphs
  // The engine: graphs for decode iterations whose sequences all decode the same number of
  // tokens (kGraphMaxQueryTokens at most), eager otherwise.
  bool graphs_decode_only_ = false;
  bool inferlab_engine_ = false;   // --framework inferlab: the engine's decode kernel
  int64_t graph_batch_limit_ = 0;  // 0: none
  // The engine waits for each pass's result (FittedStepCosts::sync_pass_s): once an iteration,
  // and once a draft model's step.
  double sync_pass_s_ = 0.0;
  // With a draft model each speculative iteration switches models twice (draft steps after the
  // target's last pass, the verification after them): FittedStepCosts::model_switch_per_layer_s
  // times the two models' layers.
  double model_switch_s_ = 0.0;
  double host_link_bps_;
  mutable std::map<std::tuple<int64_t, bool, int64_t>, double> flat_cache_;
  mutable std::unordered_map<int64_t, double> sampled_cache_, draft_cache_, draft_prefill_cache_;
  mutable std::unordered_map<uint64_t, double> attention_cache_;
  mutable std::vector<Op> scratch_;
};

}  // namespace inferlab
