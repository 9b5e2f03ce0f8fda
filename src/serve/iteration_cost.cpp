#include "serve/iteration_cost.hpp"

#include <algorithm>
#include <string_view>

#include "model/engine_blocks.hpp"
#include "model/engine_decode_plan.hpp"
#include "model/moe_routing.hpp"
#include "predict/request_predictor.hpp"

namespace inferlab {

namespace {
// The operators that run once per sampled sequence rather than once per token.
bool is_sampling_op(const Op& op) {
  const std::string_view name = op.name;
  return op.scope == Scope::post_layers &&
         (name == "lm_head" || name == "logits_all_gather" || name == "sampling");
}

double priced_s(const CostModel& cost, const std::vector<Op>& ops) {
  double total = 0.0;
  for (const auto& op : ops) total += cost.price(op).time_s * static_cast<double>(op.count);
  return total;
}

// Decode contexts are grouped to 16 tokens: attention cost is linear in context, and the
// coarser key lets long simulations reuse prices.
constexpr int64_t kContextGrain = 16;
int64_t grained(int64_t context) {
  return std::max<int64_t>(kContextGrain,
                           (context + kContextGrain / 2) / kContextGrain * kContextGrain);
}
}  // namespace

PredictedIterationCost::PredictedIterationCost(const ModelConfig& model,
                                               const HardwareSpec& hardware, const CostModel& cost,
                                               const PredictOptions& options,
                                               const HostOverhead& host,
                                               const ModelConfig* draft_model, double host_link_bps)
    : model_(model), host_link_bps_(host_link_bps) {
  context_ = make_step_context(model_, hardware, cost, options, host);
  eager_context_ = context_;
  eager_context_.cuda_graphs = false;
  graphs_decode_only_ = options.framework == Framework::inferlab && options.cuda_graphs;
  inferlab_engine_ = options.framework == Framework::inferlab;
  if (inferlab_engine_) {
    if (const auto fitted = context_.cost->fitted_step_costs()) {
      sync_pass_s_ = fitted->sync_pass_s;
      if (draft_model) {
        model_switch_s_ = fitted->model_switch_per_layer_s *
                          static_cast<double>(model_.num_layers + draft_model->num_layers);
      }
    }
  }
  if (draft_model) {
    draft_model_ = std::make_unique<ModelConfig>(*draft_model);
    PredictOptions draft_options = options;
    draft_options.tp = 1;  // a small draft runs unsharded on each device
    draft_context_ = make_step_context(*draft_model_, hardware, cost, draft_options, host);
    draft_eager_context_ = draft_context_;
    draft_eager_context_.cuda_graphs = false;  // its pass over prefill chunks
  }
}

double PredictedIterationCost::flat_s(int64_t tokens, bool graphed, double experts) const {
  // Only a mixture of experts' price depends on the experts the rows reach; a sixteenth of an
  // expert apart prices the same (so that the cache stays small).
  const int64_t experts_16ths = model_.is_moe() && experts > 0.0 ? std::llround(16.0 * experts) : 0;
  const auto key = std::make_tuple(tokens, graphed, experts_16ths);
  auto it = flat_cache_.find(key);
  if (it != flat_cache_.end()) return it->second;
  StepShape shape{Phase::prefill, 1, tokens, tokens};
  shape.routed_experts = static_cast<double>(experts_16ths) / 16.0;
  const StepPrediction step = predict_step(graphed ? context_ : eager_context_, shape);
  double t = step.time_s;
  for (const auto& p : step.ops) {
    if (is_sampling_op(p.op)) t -= p.total_s();
  }
  scratch_.clear();  // build_context_ops appends
  build_context_ops(model_, shape, context_.precision, context_.plan, context_.shard, scratch_);
  t -= priced_s(*context_.cost, scratch_);
  return flat_cache_[key] = t;
}

double PredictedIterationCost::sampled_s(int64_t seqs) const {
  if (seqs <= 0) return 0.0;
  auto it = sampled_cache_.find(seqs);
  if (it != sampled_cache_.end()) return it->second;
  build_step_graph(model_, {Phase::decode, seqs, 1, 1}, context_.precision, context_.plan,
                   context_.shard, scratch_);
  double t = 0.0;
  for (const auto& op : scratch_) {
    if (is_sampling_op(op)) t += context_.cost->price(op).time_s * static_cast<double>(op.count);
  }
  return sampled_cache_[seqs] = t;
}

double PredictedIterationCost::attention_s(int64_t seqs, int64_t new_tokens, int64_t context,
                                           bool token_view) const {
  const uint64_t key = (static_cast<uint64_t>(seqs) << 44) ^
                       (static_cast<uint64_t>(new_tokens) << 24) ^ static_cast<uint64_t>(context) ^
                       (token_view ? uint64_t{1} << 63 : 0);
  auto it = attention_cache_.find(key);
  if (it != attention_cache_.end()) return it->second;
  const StepShape shape = new_tokens == 1 && context > 1
                              ? StepShape{Phase::decode, seqs, 1, context}
                              : StepShape{Phase::prefill, seqs, new_tokens, context};
  scratch_.clear();  // build_context_ops appends
  KernelPlan plan = context_.plan;
  if (token_view) plan.engine_early_cache_reads = false;
  build_context_ops(model_, shape, context_.precision, plan, context_.shard, scratch_);
  return attention_cache_[key] = priced_s(*context_.cost, scratch_);
}

double PredictedIterationCost::draft_step_s(int64_t seqs, int64_t context) const {
  const int64_t key = (seqs << 32) | grained(context);
  auto it = draft_cache_.find(key);
  if (it != draft_cache_.end()) return it->second;
  return draft_cache_[key] =
             predict_step(draft_context_, {Phase::decode, seqs, 1, grained(context)}).time_s;
}

int64_t PredictedIterationCost::graph_rows(int64_t seqs) const {
  return graph_padded_sequences(seqs, graph_batch_limit_);
}

double PredictedIterationCost::draft_prefill_s(int64_t tokens) const {
  auto it = draft_prefill_cache_.find(tokens);
  if (it != draft_prefill_cache_.end()) return it->second;
  return draft_prefill_cache_[tokens] =
             predict_step(draft_eager_context_, {Phase::prefill, 1, tokens, tokens}).time_s;
}

double PredictedIterationCost::decode_straggler_s(int64_t kernel_seqs,
                                                  int64_t longest_context) const {
  const auto fitted = context_.cost->fitted_step_costs();
  if (!inferlab_engine_ || !fitted || fitted->decode_cta_bps <= 0.0 || fitted->sm_count <= 0) {
    return 0.0;
  }
  const ShardDims& s = context_.shard;
  // The kernel plans at the graph's bound, capped at the model's context (cuda_backend.cpp).
  const int64_t bound = model_.max_position_embeddings > 0
                            ? std::min(longest_context, model_.max_position_embeddings)
                            : longest_context;
  const DecodeSplitPlan plan = decode_split_plan(kernel_seqs, s.q_heads, s.kv_heads,
                                                 fitted->sm_count, bound, kDecodeMaxSplits);
  // The longest sequence's fullest split: keys and values of its positions, one KV head.
  const double positions = static_cast<double>(std::min(plan.partition, longest_context));
  const double bytes = 2.0 * positions * engine_kv_vector_bytes(s.head_dim, context_.precision.kv);
  return static_cast<double>(model_.num_layers) * bytes / fitted->decode_cta_bps;
}

double PredictedIterationCost::time_s(const IterationBatch& batch) const {
  if (batch.seqs.empty()) return batch.swap_bytes / host_link_bps_;
  int64_t samples = 0;
  // Decoding sequences are one attention call per distinct token count, at their mean context.
  std::unordered_map<int64_t, std::pair<int64_t, int64_t>> decode_groups;  // tokens -> seqs, sum
  int64_t one_token_decodes_count = 0, longest_decode = 0;
  // The engine replays a graph for a pass whose sequences all decode the same number of tokens
  // (one, or a speculative verification's k + 1), its sequences padded to a power of two.
  // Few tokens a sequence (speculative verification) take the engine's decode kernel over the
  // tokens, each a sequence of one query at its own context (engine_decode_plan.hpp).
  const int64_t query = batch.seqs.front().new_tokens;
  bool uniform_decodes = query <= kGraphMaxQueryTokens;
  int64_t max_query = 0, token_context_sum = 0;
  for (const auto& s : batch.seqs) {
    uniform_decodes = uniform_decodes && s.decode && s.new_tokens == query;
    max_query = std::max(max_query, s.new_tokens);
    token_context_sum += s.new_tokens * s.context - s.new_tokens * (s.new_tokens - 1) / 2;
  }
  const bool padded_graph = graphs_decode_only_ && uniform_decodes;
  const auto seqs = static_cast<int64_t>(batch.seqs.size());
  const int64_t rows = padded_graph ? graph_rows(seqs) * query : batch.total_tokens();
  // A mixture of experts reaches the experts its sequences reach, each sequence routing its own
  // tokens (a graph's padding rows route as sequences of their own).
  double experts = 0.0;
  if (model_.is_moe()) {
    std::vector<int64_t> lengths;
    if (padded_graph) {
      lengths.assign(static_cast<size_t>(rows / query), query);
    } else {
      for (const auto& s : batch.seqs) lengths.push_back(s.new_tokens);
    }
    experts = expected_active_experts(model_, lengths);
  }
  double t = flat_s(rows, !graphs_decode_only_ || uniform_decodes, experts);
  const bool by_token = inferlab_engine_ && attention_by_token(max_query, rows);
  if (by_token) {
    const int64_t tokens = batch.total_tokens();
    t += attention_s(tokens, 1, grained(std::max<int64_t>(1, token_context_sum / tokens)), true);
  }
  for (const auto& s : batch.seqs) {
    // A verification samples every one of its rows; otherwise a sequence samples its last.
    if (s.samples) samples += s.decode ? s.new_tokens : 1;
    if (by_token) continue;
    if (s.decode) {
      auto& g = decode_groups[s.new_tokens];
      ++g.first;
      g.second += s.context;
      if (s.new_tokens == 1) {
        ++one_token_decodes_count;
        longest_decode = std::max(longest_decode, s.context);
      }
    } else {
      t += attention_s(1, s.new_tokens, s.context);
    }
  }
  for (const auto& [tokens, group] : decode_groups) {
    const int64_t mean_context = std::max<int64_t>(tokens, group.second / group.first);
    double attention =
        attention_s(group.first, tokens, tokens == 1 ? grained(mean_context) : mean_context);
    // One decode kernel over all of them: at unequal contexts no faster than its longest
    // sequence's CTAs, which stream their partitions while the other SMs idle.
    if (tokens == 1) {
      const int64_t kernel_seqs = padded_graph ? rows : one_token_decodes_count;
      attention = std::max(attention, decode_straggler_s(kernel_seqs, longest_decode));
    }
    t += attention;
  }
  t += sampled_s(padded_graph ? rows : samples);  // a graph's LM head and sampler run every row
  // The engine runs every prefill chunk through the draft model too, so that its KV is there
  // when the sequence drafts: one eager prefill pass of the draft over the chunks' tokens.
  int64_t prefill_tokens = 0;
  for (const auto& s : batch.seqs) prefill_tokens += s.decode ? 0 : s.new_tokens;
  if (draft_model_ && prefill_tokens > 0) t += draft_prefill_s(prefill_tokens);
  if (batch.speculative_k > 0 && batch.drafting_seqs > 0 && draft_model_) {
    t += batch.speculative_k *
             (draft_step_s(batch.drafting_seqs, batch.draft_context) + sync_pass_s_) +
         model_switch_s_;
  }
  return t + sync_pass_s_ + batch.swap_bytes / host_link_bps_;
}

}  // namespace inferlab
