// The CUDA backend's mixture-of-experts MLP block (moe_kernels.hpp has the kernels):
//   add+RMSNorm → router + top-k → experts → weighted combine into proj_
// The experts run in one of four forms (model/engine_moe_rules.hpp picks; moe_form applies the
// A/B switch) with the same numerics:
//   slot kernels (a token's few slots): a kernel for gate/up + SiLU×mul and one for down, slot
//     by slot, each reading only the expert its slot chose;
//   one grouped GEMM (many-expert models past the slot kernels, below 256 slots an expert:
//     batched decode and prefill): each slot's input gathered next to its expert's others, then
//     one tensor-core launch for gate/up with SiLU×mul and one for down over every expert's rows,
//     the counts read on the device, so graphs capture these passes;
//   grouped kernels (shapes the one-launch GEMM does not take, and the A/B switch's per_expert):
//     the slots sorted by expert on the device, the slot kernels' products with each chosen
//     expert's weights read once for all its slots on CUDA cores; graph-capturable too;
//   GEMMs (few wide experts: Mixtral's batches and prefill; many-expert passes from 256 slots an
//     expert): the experts' row counts to the host (one synchronisation a layer, so these passes
//     run eagerly), the same gather, a cuBLASLt GEMM per expert over its rows (Projector),
//     SiLU×mul over all slots at once.
#include <algorithm>
#include <vector>

#include "engine/cuda/cuda_backend_impl.hpp"
#include "engine/cuda/layer_kernels.hpp"
#include "model/engine_blocks.hpp"

namespace inferlab::engine::cuda {
namespace {

// One MoE layer's sizes on this GPU, as the kernels take them.
struct MoeSizes {
  int hidden, inter, experts, top_k, slots;
};
MoeSizes moe_sizes(const ModelConfig& m, int tokens) {
  const auto top_k = static_cast<int>(m.experts_per_token);
  return {static_cast<int>(m.hidden_size), static_cast<int>(m.intermediate_size),
          static_cast<int>(m.num_experts), top_k, tokens * top_k};
}

}  // namespace

MoeRouting CudaBackend::moe_routing() {
  const int64_t slots = sizes_.moe_slots;
  int32_t* ints = moe_ints_.data();
  MoeRouting routing;
  routing.expert_ids = ints;
  routing.sorted_slots = ints + slots;
  routing.slot_position = ints + 2 * slots;
  routing.expert_offsets = ints + 3 * slots;
  routing.expert_weights = moe_floats_.data();
  routing.router_logits = moe_floats_.data() + slots;
  return routing;
}

void CudaBackend::record_routing(int64_t layer, const int32_t* expert_ids, int slots) {
  const size_t per_layer = static_cast<size_t>(sizes_.moe_slots);
  if (routing_ids_.size() == 0) {
    routing_ids_ = DeviceBuffer<int32_t>(static_cast<size_t>(config_.model.num_layers) * per_layer);
  }
  INFERLAB_CUDA_CHECK(cudaMemcpyAsync(routing_ids_.data() + static_cast<size_t>(layer) * per_layer,
                                      expert_ids, static_cast<size_t>(slots) * sizeof(int32_t),
                                      cudaMemcpyDeviceToDevice, stream_));
  routing_slots_ = slots;
}

void CudaBackend::collect_routing() {
  if (routing_slots_ == 0) return;
  const ModelConfig& m = config_.model;
  const size_t per_layer = static_cast<size_t>(sizes_.moe_slots);
  std::vector<int32_t> ids(routing_ids_.size());
  INFERLAB_CUDA_CHECK(cudaMemcpy(ids.data(), routing_ids_.data(), ids.size() * sizeof(int32_t),
                                 cudaMemcpyDeviceToHost));
  const auto slots = static_cast<size_t>(routing_slots_);
  for (int64_t layer = 0; layer < m.num_layers; ++layer) {
    const std::span<const int32_t> layer_ids(ids.data() + static_cast<size_t>(layer) * per_layer,
                                             slots);
    routing_.add_layer(layer_ids, routing_slots_ / m.experts_per_token, m.num_experts);
  }
  routing_slots_ = 0;
}

MoeExpertForm CudaBackend::moe_form(int tokens) const {
  // The rule (model/engine_moe_rules.hpp, which the prediction reads too), then the A/B switch
  // (engine_tuning.hpp's MoeGemmChoice).
  const auto [hidden, inter, experts, top_k, slots] = moe_sizes(config_.model, tokens);
  switch (options_.tuning.moe_gemm) {
    case MoeGemmChoice::per_expert:
      return engine_moe_form_without_grouped_gemm(tokens, experts, top_k);
    case MoeGemmChoice::one_launch: {
      const MoeExpertForm form = engine_moe_form(tokens, experts, top_k, hidden, inter);
      return form != MoeExpertForm::slots && engine_moe_grouped_gemm_fits(hidden, inter)
                 ? MoeExpertForm::grouped_gemm
                 : form;
    }
    case MoeGemmChoice::automatic:
      break;
  }
  return engine_moe_form(tokens, experts, top_k, hidden, inter);
}

bool CudaBackend::moe_capturable(int tokens) const {
  // Every form but the per-expert GEMMs runs without a host read of the experts' row counts.
  return moe_form(tokens) != MoeExpertForm::gemm;
}

void CudaBackend::launch_moe_block(int64_t layer, int tokens) {
  const DeviceLayer& w = weights_.layers[static_cast<size_t>(layer)];
  const auto [hidden, inter, experts, top_k, slots] = moe_sizes(config_.model, tokens);
  const auto eps = static_cast<float>(config_.rms_norm_eps);
  const double t = tokens, s = slots;
  add_rms_norm(residual_.data(), proj_.data(), w.post_norm, tokens, hidden, eps, normed_.data(),
               stream_);
  timer_.mark("norm", 8.0 * t * hidden);
  const MoeRouting routing = moe_routing();
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  INFERLAB_CUDA_CHECK(cudaStreamIsCapturing(stream_, &capture));
  MoeExpertForm form = moe_form(tokens);
  // A graph cannot hold the host read the GEMMs need: a captured pass takes the grouped kernels.
  if (capture != cudaStreamCaptureStatusNone && form == MoeExpertForm::gemm) {
    form = MoeExpertForm::grouped;
  }
  if (engine_moe_route_form(tokens, experts) == MoeRouteForm::gemm) {
    projector_.linear(normed_.data(), tokens, expert_matrix(w.router, experts, hidden), nullptr,
                      routing.router_logits, /*y_fp32=*/true, stream_);
    moe_select(tokens, experts, top_k, config_.moe.renormalize_top_k, routing, stream_);
  } else {
    moe_route(normed_.data(), w.router, tokens, hidden, experts, top_k,
              config_.moe.renormalize_top_k, routing, stream_);
  }
  // The slot kernels go slot by slot; the grouped kernels and the GEMMs need the slots grouped
  // by expert.
  if (form != MoeExpertForm::slots) moe_sort_by_expert(slots, experts, routing, stream_);
  timer_.mark("moe_route", 2.0 * (t + experts) * hidden + 8.0 * s, 2.0 * t * experts * hidden);
  // A profiled pass (eager, never captured) keeps where the slots went, copied on the device and
  // read once the pass is done: no second wait for the host (the copy's few microseconds land
  // in the next mark).
  if (timer_.enabled() && capture == cudaStreamCaptureStatusNone) {
    record_routing(layer, routing.expert_ids, slots);
  }

  // The GEMMs' row counts, on the host; a profiled pass of the device-side forms reads them too,
  // so that its bytes count the experts the batch reached (not an assumed spread).
  std::vector<int32_t> offsets;
  if (form == MoeExpertForm::gemm || (form != MoeExpertForm::slots && timer_.enabled())) {
    offsets.resize(static_cast<size_t>(experts) + 1);
    INFERLAB_CUDA_CHECK(cudaMemcpyAsync(offsets.data(), routing.expert_offsets,
                                        offsets.size() * sizeof(int32_t), cudaMemcpyDeviceToHost,
                                        stream_));
    INFERLAB_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  double experts_reached = 0;
  for (int e = 0; e < static_cast<int>(offsets.size()) - 1; ++e) {
    experts_reached += offsets[static_cast<size_t>(e) + 1] > offsets[static_cast<size_t>(e)];
  }
  // The slot kernels read an expert once per slot that chose it; the others once.
  const double reads = form == MoeExpertForm::slots ? s : experts_reached;
  const double gate_up_bytes = reads * 2.0 * 2 * inter * hidden;
  const double down_bytes = reads * 2.0 * hidden * inter;
  const double act = 2.0 * s;  // bytes per feature of the slots' rows

  switch (form) {
    case MoeExpertForm::slots:
    case MoeExpertForm::grouped:
      launch_moe_decode_experts(w, form, tokens, routing, gate_up_bytes, down_bytes);
      break;
    case MoeExpertForm::grouped_gemm:
      moe_gather_slots(normed_.data(), slots, top_k, hidden, routing, moe_in_.data(), stream_);
      timer_.mark("moe_route", 2.0 * act * hidden);
      moe_grouped_gemm_swiglu(moe_in_.data(), w.experts_gate_up, slots, experts, inter, hidden,
                              routing.expert_offsets, act_.data(), stream_);
      timer_.mark("gemm_gate_up", gate_up_bytes + act * (hidden + inter), 4.0 * s * inter * hidden);
      moe_grouped_gemm(act_.data(), w.experts_down, slots, experts, hidden, inter,
                       routing.expert_offsets, moe_out_.data(), stream_);
      timer_.mark("gemm_down", down_bytes + act * (inter + hidden), 2.0 * s * hidden * inter);
      break;
    case MoeExpertForm::gemm:
      launch_moe_expert_gemms(w, tokens, offsets, routing, gate_up_bytes, down_bytes);
      break;
  }
  // The slot and grouped kernels write by slot, the GEMMs by sorted position.
  const bool by_slot = form == MoeExpertForm::slots || form == MoeExpertForm::grouped;
  moe_combine(moe_out_.data(), by_slot, tokens, top_k, hidden, routing, proj_.data(), stream_);
  timer_.mark("moe_combine", act * hidden + 2.0 * t * hidden);
}

void CudaBackend::launch_moe_decode_experts(const DeviceLayer& w, MoeExpertForm form, int tokens,
                                            const MoeRouting& routing, double gate_up_bytes,
                                            double down_bytes) {
  const auto [hidden, inter, experts, top_k, slots] = moe_sizes(config_.model, tokens);
  const double s = slots, act = 2.0 * s;
  if (form == MoeExpertForm::slots) {
    moe_expert_gate_up(normed_.data(), w.experts_gate_up, slots, top_k, hidden, inter, routing,
                       act_.data(), stream_);
  } else {
    moe_grouped_gate_up(normed_.data(), w.experts_gate_up, experts, top_k, hidden, inter, routing,
                        act_.data(), stream_);
  }
  timer_.mark("gemm_gate_up", gate_up_bytes + act * (hidden + inter), 4.0 * s * inter * hidden);
  if (form == MoeExpertForm::slots) {
    moe_expert_down(act_.data(), w.experts_down, slots, hidden, inter, routing, moe_out_.data(),
                    stream_);
  } else {
    moe_grouped_down(act_.data(), w.experts_down, experts, hidden, inter, routing, moe_out_.data(),
                     stream_);
  }
  timer_.mark("gemm_down", down_bytes + act * (inter + hidden), 2.0 * s * hidden * inter);
}

void CudaBackend::launch_moe_expert_gemms(const DeviceLayer& w, int tokens,
                                          const std::vector<int32_t>& offsets,
                                          const MoeRouting& routing, double gate_up_bytes,
                                          double down_bytes) {
  const auto [hidden, inter, experts, top_k, slots] = moe_sizes(config_.model, tokens);
  const double s = slots, act = 2.0 * s;
  moe_gather_slots(normed_.data(), slots, top_k, hidden, routing, moe_in_.data(), stream_);
  timer_.mark("moe_route", 2.0 * act * hidden);
  for (int e = 0; e < experts; ++e) {
    const int first = offsets[static_cast<size_t>(e)];
    const int rows = offsets[static_cast<size_t>(e) + 1] - first;
    if (rows == 0) continue;
    projector_.linear(moe_in_.data() + static_cast<int64_t>(first) * hidden, rows,
                      expert_matrix(w.experts_gate_up, 2 * inter, hidden, e), nullptr,
                      gate_up_.data() + static_cast<int64_t>(first) * 2 * inter, false, stream_);
  }
  timer_.mark("gemm_gate_up", gate_up_bytes + act * (hidden + 2 * inter), 4.0 * s * inter * hidden);
  silu_mul_halves(gate_up_.data(), slots, inter, act_.data(), stream_);
  timer_.mark("silu_mul", act * 3 * inter);
  for (int e = 0; e < experts; ++e) {
    const int first = offsets[static_cast<size_t>(e)];
    const int rows = offsets[static_cast<size_t>(e) + 1] - first;
    if (rows == 0) continue;
    projector_.linear(act_.data() + static_cast<int64_t>(first) * inter, rows,
                      expert_matrix(w.experts_down, hidden, inter, e), nullptr,
                      moe_out_.data() + static_cast<int64_t>(first) * hidden, false, stream_);
  }
  timer_.mark("gemm_down", down_bytes + act * (inter + hidden), 2.0 * s * hidden * inter);
}

}  // namespace inferlab::engine::cuda
