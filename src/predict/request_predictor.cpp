#include "predict/request_predictor.hpp"

#include <vector>

namespace inferlab {

StepContext make_step_context(const ModelConfig& model, const HardwareSpec& hardware,
                              const CostModel& cost, const PredictOptions& options,
                              const HostOverhead& host) {
  validate_sizes(options);
  StepContext c;
  c.model = &model;
  c.cost = &cost;
  c.precision = resolve_precision(options, hardware);
  c.plan = kernel_plan_of(options);
  c.shard = shard_dims(model, options.tp);
  c.cuda_graphs = options.cuda_graphs;
  c.framework = options.framework;
  c.host = host;
  return c;
}

namespace {

// Sum of decode step times over contexts [first_context, first_context + steps). Under CUDA
// graphs only the context-dependent ops change from step to step, so the rest is priced once.
double decode_total(const StepContext& c, const StepPrediction& first, int64_t batch,
                    int64_t first_context, int64_t steps) {
  if (steps <= 0) return 0.0;
  if (!c.cuda_graphs) {
    double total = first.time_s;
    for (int64_t i = 1; i < steps; ++i) {
      total += predict_step(c, {Phase::decode, batch, 1, first_context + i}).time_s;
    }
    return total;
  }
  double fixed_s = first.time_s;
  for (const auto& p : first.ops) {
    if (p.op.context_dependent) fixed_s -= p.total_s();
  }
  double total = 0.0;
  std::vector<Op> context_ops;
  for (int64_t i = 0; i < steps; ++i) {
    StepShape shape{Phase::decode, batch, 1, first_context + i};
    context_ops.clear();
    build_context_ops(*c.model, shape, c.precision, c.plan, c.shard, context_ops);
    double step_s = fixed_s;
    for (const Op& op : context_ops) {
      step_s += c.cost->price(op).time_s * static_cast<double>(op.count);
    }
    total += step_s;
  }
  return total;
}

}  // namespace

RequestPrediction predict_request(const ModelConfig& model, const HardwareSpec& hardware,
                                  const CostModel& cost, const PredictOptions& o,
                                  const HostOverhead& host) {
  StepContext c = make_step_context(model, hardware, cost, o, host);
  RequestPrediction r;
  c.price_isolated = true;  // the two reported steps' operators carry their isolated times
  {
    // The inferlab engine replays decode steps from graphs; its prefill always runs eagerly.
    StepContext prefill = c;
    if (o.framework == Framework::inferlab) prefill.cuda_graphs = false;
    r.prefill = predict_step(prefill, {Phase::prefill, o.batch, o.input_tokens, o.input_tokens});
  }
  r.prefill_s = r.prefill.time_s;
  r.ttft_s = r.prefill_s;
  r.decode_steps = o.output_tokens - 1;
  r.first_decode = predict_step(c, {Phase::decode, o.batch, 1, o.input_tokens + 1});
  c.price_isolated = false;
  r.decode_total_s = decode_total(c, r.first_decode, o.batch, o.input_tokens + 1, r.decode_steps);
  r.tpot_s = r.decode_steps > 0 ? r.decode_total_s / static_cast<double>(r.decode_steps) : 0.0;
  r.e2e_s = r.ttft_s + r.decode_total_s;
  if (r.decode_total_s > 0.0) {
    r.decode_tokens_per_s = static_cast<double>(o.batch * r.decode_steps) / r.decode_total_s;
  }
  r.total_tokens_per_s = static_cast<double>(o.batch * o.output_tokens) / r.e2e_s;
  r.memory = estimate_memory(model, c.precision, c.plan, c.shard, o.batch, o.input_tokens,
                             o.output_tokens, hardware.memory_bytes, o.gpu_memory_utilization);
  return r;
}

}  // namespace inferlab
