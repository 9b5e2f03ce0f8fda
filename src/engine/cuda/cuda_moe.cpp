// The CUDA backend's mixture-of-experts MLP block (moe_kernels.hpp has the kernels):
//   add+RMSNorm → router + top-k → experts → weighted combine into proj_
// The experts run in one of two forms with the same numerics:
//   decode kernels (a token's few slots, every pass a graph replays): a kernel for gate/up +
//     SiLU×mul and one for down, slot by slot, each reading only the expert its slot chose;
//   GEMMs (more slots: batched decode, prefill): the slots sorted by expert on the device, the
//     experts' row counts to the host (one synchronisation a layer, so these passes run
//     eagerly), each slot's input gathered next to its expert's others, a cuBLASLt GEMM per
//     expert over its rows (Projector: the tensor cores), SiLU×mul over all slots at once.
#include <algorithm>
#include <vector>

#include "engine/cuda/cuda_backend_impl.hpp"
#include "engine/cuda/layer_kernels.hpp"
#include "model/engine_blocks.hpp"

namespace inferlab::engine::cuda {

MoeRouting CudaBackend::moe_routing() {
  const int64_t slots = sizes_.moe_slots;
  int32_t* ints = moe_ints_.data();
  MoeRouting routing;
  routing.expert_ids = ints;
  routing.sorted_slots = ints + slots;
  routing.slot_position = ints + 2 * slots;
  routing.expert_offsets = ints + 3 * slots;
  routing.expert_weights = moe_floats_.data();
  return routing;
}

bool CudaBackend::moe_takes_gemv(int tokens) const {
  // The decode kernels multiply on CUDA cores, slot by slot: one token streams its experts'
  // weights at 3.5 TB/s (gate/up) on the H200, but every slot reads its expert again and costs
  // its arithmetic again; at batch 32 of Mixtral 8x7B (8 slots an expert) the CUDA-core kernels
  // took 142 ms a step where cuBLASLt's GEMMs over each expert's rows took 27 (MEASUREMENTS
  // §48). The rule is model/engine_blocks.hpp's, which the prediction reads too.
  const ModelConfig& m = config_.model;
  return engine_moe_decode_kernels(tokens, m.num_experts, m.experts_per_token);
}

void CudaBackend::launch_moe_block(int64_t layer, int tokens) {
  const ModelConfig& m = config_.model;
  const DeviceLayer& w = weights_.layers[static_cast<size_t>(layer)];
  const int hidden = static_cast<int>(m.hidden_size), inter = static_cast<int>(m.intermediate_size);
  const int experts = static_cast<int>(m.num_experts),
            top_k = static_cast<int>(m.experts_per_token);
  const int slots = tokens * top_k;
  const auto eps = static_cast<float>(config_.rms_norm_eps);
  const double t = tokens, s = slots;
  add_rms_norm(residual_.data(), proj_.data(), w.post_norm, tokens, hidden, eps, normed_.data(),
               stream_);
  timer_.mark("norm", 8.0 * t * hidden);
  const MoeRouting routing = moe_routing();
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  INFERLAB_CUDA_CHECK(cudaStreamIsCapturing(stream_, &capture));
  const bool gemv = capture != cudaStreamCaptureStatusNone || moe_takes_gemv(tokens);
  moe_route(normed_.data(), w.router, tokens, hidden, experts, top_k, config_.moe.renormalize_top_k,
            routing, stream_);
  // The decode kernels go slot by slot; the GEMMs need the slots grouped by expert.
  if (!gemv) moe_sort_by_expert(slots, experts, routing, stream_);
  timer_.mark("moe_route", 2.0 * (t + experts) * hidden + 8.0 * s, 2.0 * t * experts * hidden);

  // The GEMMs' row counts, on the host; a profiled pass's bytes count the experts the batch
  // reached (not an assumed spread).
  std::vector<int32_t> offsets;
  if (!gemv) {
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
  // The decode kernels read an expert once per slot that chose it; the GEMMs once.
  const double reads = gemv ? s : experts_reached;
  const double gate_up_bytes = reads * 2.0 * 2 * inter * hidden;
  const double down_bytes = reads * 2.0 * hidden * inter;
  const double act = 2.0 * s;  // bytes per feature of the slots' rows

  if (gemv) {
    moe_expert_gate_up(normed_.data(), w.experts_gate_up, slots, top_k, hidden, inter, routing,
                       act_.data(), stream_);
    timer_.mark("gemm_gate_up", gate_up_bytes + act * (hidden + inter), 4.0 * s * inter * hidden);
    moe_expert_down(act_.data(), w.experts_down, slots, hidden, inter, routing, moe_out_.data(),
                    stream_);
    timer_.mark("gemm_down", down_bytes + act * (inter + hidden), 2.0 * s * hidden * inter);
  } else {
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
    timer_.mark("gemm_gate_up", gate_up_bytes + act * (hidden + 2 * inter),
                4.0 * s * inter * hidden);
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
  moe_combine(moe_out_.data(), gemv, tokens, top_k, hidden, routing, proj_.data(), stream_);
  timer_.mark("moe_combine", act * hidden + 2.0 * t * hidden);
}

}  // namespace inferlab::engine::cuda
