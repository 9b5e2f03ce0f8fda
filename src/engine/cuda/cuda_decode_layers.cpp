// The CUDA backend's use of the persistent decode kernel (decode_layers.hpp): which models,
// options and passes take it, its device tables, its launch.
#include <cmath>
#include <fstream>
#include <vector>

#include "engine/cuda/cuda_backend_impl.hpp"
#include "engine/cuda/device_facts.hpp"

namespace inferlab::engine::cuda {

namespace {

// Whether DecodeLayersChoice::automatic picks the persistent kernel where it runs.
constexpr bool kPersistentDecodeByDefault = false;

bool plain_bf16(const DeviceMatrix& m) {
  return m.format == DType::bf16 && m.input_format == DType::bf16 && m.data != nullptr;
}

}  // namespace

void CudaBackend::setup_persistent_decode() {
  const DecodeLayersChoice choice = options_.tuning.decode_layers;
  if (choice == DecodeLayersChoice::kernels ||
      (choice == DecodeLayersChoice::automatic && !kPersistentDecodeByDefault)) {
    return;
  }
  const ModelConfig& m = config_.model;
  // The fused decode layer of one GPU with bf16 weights and cache, nothing around it.
  if (m.is_moe() || options_.collectives != nullptr || !options_.fusion ||
      options_.naive_attention || options_.quant.kv != DType::bf16 || config_.sliding_window != 0 ||
      weights_.layers.empty()) {
    return;
  }
  for (const DeviceLayer& w : weights_.layers) {
    if (!plain_bf16(w.qkv) || !plain_bf16(w.o_proj) || !plain_bf16(w.gate_up) ||
        !plain_bf16(w.down) || w.qkv_bias != nullptr || w.q_norm != nullptr) {
      return;
    }
  }
  PersistentDecodeShape shape;
  shape.layers = static_cast<int>(m.num_layers);
  shape.hidden = static_cast<int>(m.hidden_size);
  shape.intermediate = static_cast<int>(m.intermediate_size);
  shape.num_heads = static_cast<int>(m.num_heads);
  shape.num_kv_heads = static_cast<int>(m.num_kv_heads);
  shape.head_dim = static_cast<int>(m.head_dim);
  shape.block_size = static_cast<int>(layout_.block_size);
  if (!persistent_decode_supported(shape, current_device_facts().compute_capability())) return;

  std::vector<PersistentDecodeLayer> table;
  for (int64_t l = 0; l < m.num_layers; ++l) {
    const DeviceLayer& w = weights_.layers[static_cast<size_t>(l)];
    const KvLayerCache cache = kv_.layer(l);
    PersistentDecodeLayer t;
    t.input_norm = w.input_norm;
    t.post_norm = w.post_norm;
    t.qkv = static_cast<const bf16*>(w.qkv.data);
    t.o_proj = static_cast<const bf16*>(w.o_proj.data);
    t.gate_up = static_cast<const bf16*>(w.gate_up.data);
    t.down = static_cast<const bf16*>(w.down.data);
    t.k_cache = static_cast<bf16*>(cache.k);
    t.v_cache = static_cast<bf16*>(cache.v);
    table.push_back(t);
  }
  persistent_layers_ = DeviceBuffer<PersistentDecodeLayer>(table.size());
  persistent_layers_.upload(table.data(), table.size());
  persistent_partials_ = DeviceBuffer<float>(persistent_decode_partial_floats(shape));
  persistent_counters_ = DeviceBuffer<unsigned>(persistent_decode_counters(shape));
  // On the backend's stream (non-blocking: not ordered after the legacy default stream's work).
  INFERLAB_CUDA_CHECK(
      cudaMemsetAsync(persistent_counters_.data(), 0, persistent_counters_.bytes(), stream_));
  persistent_shape_ = shape;
  if (!options_.tuning.decode_trace.empty()) {
    const auto sms = static_cast<size_t>(current_device_facts().sm_count);
    persistent_trace_ =
        DeviceBuffer<unsigned long long>(sms * persistent_decode_trace_stamps(shape));
  }
}

void CudaBackend::write_persistent_trace() {
  if (persistent_trace_.size() == 0 || persistent_passes_ == 0) return;
  std::vector<unsigned long long> stamps(persistent_trace_.size());
  if (cudaStreamSynchronize(stream_) != cudaSuccess ||
      cudaMemcpy(stamps.data(), persistent_trace_.data(), persistent_trace_.bytes(),
                 cudaMemcpyDeviceToHost) != cudaSuccess) {
    return;  // a destructor's best effort: a failed pass has already said why
  }
  std::ofstream out(options_.tuning.decode_trace);
  out << "block,layer,stage,end_ns,barrier_ns\n";  // ns from block 0's start
  const int per_block = persistent_decode_trace_stamps(persistent_shape_);
  const unsigned long long origin = stamps[0];
  const auto at = [&](size_t i) { return static_cast<long long>(stamps[i] - origin); };
  for (size_t block = 0; block * per_block < stamps.size(); ++block) {
    for (int layer = 0; layer < persistent_shape_.layers; ++layer) {
      for (int stage = 0; stage < 5; ++stage) {
        const size_t k = block * per_block + 1 + 10 * layer + 2 * stage;
        out << block << ',' << layer << ',' << "ABCDE"[stage] << ',' << at(k) << ',' << at(k + 1)
            << '\n';
      }
    }
  }
}

bool CudaBackend::persistent_for(const ForwardMetadata& meta) const {
  return persistent_layers_.size() > 0 && meta.tokens() == 1 && meta.sequences() == 1 &&
         !timer_.enabled() && stats_.data() == nullptr && fused_for(1);
}

void CudaBackend::launch_persistent_layers(const ForwardMetadata& meta) {
  const auto o = meta.offsets();
  const int32_t* dev = metadata_.data();
  PersistentDecodeParams p;
  p.shape = persistent_shape_;
  p.layers = persistent_layers_.data();
  p.eps = static_cast<float>(config_.rms_norm_eps);
  p.softmax_scale = 1.0f / std::sqrt(static_cast<float>(config_.model.head_dim));
  p.position = dev + o.positions;
  p.slot = dev + o.slots;
  p.block_table = dev + o.block_tables;
  p.context_len = dev + o.context_lens;
  p.inv_freq = inv_freq_.data();
  p.residual = residual_.data();
  p.qkv = qkv_.data();
  p.attn = attn_.data();
  p.act = act_.data();
  p.partials = persistent_partials_.data();
  p.counters = persistent_counters_.data();
  p.splits = static_cast<int>(options_.tuning.attention.decode_splits);
  p.trace = persistent_trace_.data();
  p.ring_slots = static_cast<int>(options_.tuning.decode_ring_slots);
  launch_persistent_decode(p, stream_);
  ++persistent_passes_;
}

}  // namespace inferlab::engine::cuda
