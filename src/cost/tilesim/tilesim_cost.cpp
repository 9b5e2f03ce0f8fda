#include "cost/tilesim/tilesim_cost.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "util/numeric.hpp"

namespace inferlab {

namespace {
constexpr double kDecodeMinSplitTokens = 256.0;      // flash-decoding splits KV no finer than this
constexpr double kSoftmaxVectorFlopsPerScore = 4.0;  // max, subtract, scale, sum
// The framework's row-norm kernel (see norm_row_chain_s): threads per row, bytes each moves
// per access, and the registers a thread holds (what bounds CTAs resident per core).
constexpr double kNormCtaThreads = 128.0;
constexpr double kVectorAccessBytes = 16.0;
constexpr double kRegistersPerThread = 32.0;
constexpr double kRegisterBytes = 4.0;
// Share of the global buffer an activation may take and still be read from there by the next
// kernel (the rest holds weights streaming through and other tensors).
constexpr double kResidentShare = 0.5;

const char* largest_part(const TileSimBreakdown& b) {
  const std::array<std::pair<double, const char*>, 7> parts = {
      {{b.compute_s, "compute"},
       {b.vector_s, "vector"},
       {b.local_s, "local"},
       {b.global_s, "global"},
       {b.memory_s, "memory"},
       {b.communication_s, "communication"},
       {b.fixed_s, "fixed"}}};
  return std::max_element(parts.begin(), parts.end(),
                          [](auto a, auto c) { return a.first < c.first; })
      ->second;
}

bool is_norm(const Op& op) {
  return op.kind == OpKind::rmsnorm || op.kind == OpKind::add_rmsnorm ||
         op.kind == OpKind::layernorm || op.kind == OpKind::add_layernorm;
}

// Special-function evaluations (exp, rsqrt, tanh) per operator instance.
double special_ops(const Op& op) {
  switch (op.kind) {
    case OpKind::rmsnorm:
    case OpKind::add_rmsnorm:
    case OpKind::layernorm:
    case OpKind::add_layernorm:
      return static_cast<double>(op.rows);
    case OpKind::attention_softmax:
    case OpKind::sampling:
      return static_cast<double>(op.rows * op.cols);
    case OpKind::silu_mul:
    case OpKind::silu:
    case OpKind::gelu:
      return op.flops / 5.0;  // one exp or tanh per element (builders count ~5 FLOPs each)
    default:
      return 0.0;
  }
}
}  // namespace

TileSimCostModel::TileSimCostModel(HardwareTemplate hardware, int threads)
    : hw_(std::make_unique<HardwareTemplate>(std::move(hardware))),
      mapper_(std::make_unique<GemmMapper>(*hw_, threads)) {}

double TileSimCostModel::stream_rate_bps(double bytes) const {
  if (bytes <= kResidentShare * hw_->global_buffer_bytes) {
    return hw_->global_buffer_bandwidth_bps * hw_->efficiency.global_buffer;
  }
  return hw_->memory.bandwidth_bps * hw_->efficiency.memory;
}

TileSimBreakdown TileSimCostModel::simulate_gemm(const Op& op) const {
  GemmProblem p;
  p.m = op.gemm.m, p.n = op.gemm.n, p.k = op.gemm.k, p.groups = op.gemm.groups;
  p.dtype = op.compute_dtype;
  if (hw_->core.tensor.macs_per_cycle(p.dtype) <= 0.0) p.dtype = DType::bf16;
  p.input_bytes = dtype_bytes(op.compute_dtype);
  p.output_bytes = p.input_bytes;
  GemmMapping m = mapper_->map(p);
  TileSimBreakdown b;
  b.compute_s = m.compute_s, b.local_s = m.local_s, b.global_s = m.global_s;
  // The mapper moves operands in the tensor-unit format; quantized weights move fewer bytes.
  const double nominal = static_cast<double>(p.groups) * p.input_bytes *
                         static_cast<double>(p.m * p.k + p.n * p.k + p.m * p.n);
  const double scale = nominal > 0.0 ? std::min(1.0, op.bytes() / nominal) : 1.0;
  b.memory_s = m.memory_s * scale;
  b.fixed_s = m.fixed_s + m.reduce_s;
  b.ramp_s = hw_->efficiency.memory_ramp_s;  // inside the mapper's fixed_s
  b.core_s = m.core_s;
  b.time_s = std::max(m.core_s, b.memory_s) + b.fixed_s;
  b.mapping = m.describe();
  b.bound = largest_part(b);
  return b;
}

TileSimBreakdown TileSimCostModel::simulate_attention(const Op& op) const {
  const auto& a = op.attention;
  const auto& hw = *hw_;
  const double cores = hw.core_count;
  const DType dtype =
      hw.core.tensor.macs_per_cycle(op.compute_dtype) > 0.0 ? op.compute_dtype : DType::bf16;
  const double core_macs_s = hw.core.tensor.per_core * hw.core.tensor.macs_per_cycle(dtype) *
                             hw.clock_hz * hw.efficiency.tensor;
  const double core_vector_s =
      hw.core.vector_lanes * hw.core.vector_flops_per_lane_cycle * hw.clock_hz;
  const double core_sfu_s = hw.core.sfu_ops_per_cycle * hw.clock_hz;
  const double memory_bw = hw.memory.bandwidth_bps * hw.efficiency.memory;
  const double eb = dtype_bytes(op.compute_dtype);
  TileSimBreakdown b;
  const bool prefill = a.q_len > kAttentionDecodeMaxQueryRows;
  b.ramp_s = hw.efficiency.memory_ramp_s;
  b.fixed_s = hw.efficiency.kernel_floor(prefill ? KernelKind::attention_prefill
                                                 : KernelKind::attention_decode) +
              b.ramp_s;
  b.memory_s = op.bytes() / memory_bw;
  if (prefill) {
    // Prefill: one CTA per 128-row query tile of each (sequence, head), in waves.
    const double rows = std::min<double>(kFlashPrefillQueryTile, a.q_len);
    const double ctas = static_cast<double>(a.batch * a.q_heads) * ceil_div(a.q_len, rows);
    const double active = std::min(ctas, cores);
    const double global_rate = hw.global_buffer_rate_per_core_bps(active);
    const double scores = op.flops / (4.0 * a.head_dim);  // QK^T entries computed
    auto tile_time = [&](double tile_scores, double keys) {
      const double mac_s = 2.0 * tile_scores * a.head_dim / core_macs_s;  // QK^T and PV
      const double softmax_s = std::max(tile_scores * kSoftmaxVectorFlopsPerScore / core_vector_s,
                                        tile_scores / core_sfu_s);
      const double load_s = 2.0 * keys * a.head_dim * eb / global_rate;  // K and V tiles
      // FlashAttention-2 alternates the matrix products and the softmax of each key block; the
      // loads of the next block overlap both.
      return std::make_tuple(mac_s, softmax_s, load_s, std::max(mac_s + softmax_s, load_s));
    };
    const double avg_scores = scores / ctas;
    auto [mac_s, softmax_s, load_s, avg_s] = tile_time(avg_scores, avg_scores / rows);
    const double waves = ceil_div(ctas, cores);
    // The last causal tile sees every key: it bounds the length of a wave.
    auto longest = tile_time(rows * a.kv_len, static_cast<double>(a.kv_len));
    const double core_s = std::max(waves * avg_s, std::get<3>(longest));
    b.core_s = core_s;
    b.compute_s = waves * mac_s, b.vector_s = waves * softmax_s, b.global_s = waves * load_s;
    b.time_s = std::max(core_s, b.memory_s) + b.fixed_s;
    b.mapping = "FlashAttention: " + std::to_string(static_cast<int64_t>(ctas)) +
                " query tiles of " + std::to_string(static_cast<int64_t>(rows)) + " rows, " +
                std::to_string(static_cast<int64_t>(waves)) + " waves";
  } else {
    // Decode: each (sequence, KV head) streams its cache, split along the context until the
    // cores are busy (flash-decoding); a core can keep only so many bytes in flight.
    const double ctas = static_cast<double>(a.batch * a.kv_heads);
    const double splits = std::clamp(std::floor(a.kv_len / kDecodeMinSplitTokens), 1.0,
                                     std::max(1.0, std::ceil(cores / ctas)));
    const double workers = ctas * splits;
    const double core_rate = hw.memory_rate_per_core_bps();
    const double per_worker_bytes = op.kv_bytes / workers;
    const double stream_s = ceil_div(workers, cores) * per_worker_bytes / core_rate;
    b.local_s = stream_s;
    b.compute_s = op.flops / (core_macs_s * cores);
    b.core_s = std::max(stream_s, b.compute_s);
    b.time_s = std::max(b.memory_s, b.core_s) + b.fixed_s;
    if (splits > 1.0) b.time_s += hw.efficiency.kernel_floor(KernelKind::elementwise);  // combine
    b.mapping = "flash-decoding: " + std::to_string(static_cast<int64_t>(ctas)) +
                " (sequence, KV head) streams x " + std::to_string(static_cast<int64_t>(splits)) +
                " splits";
  }
  b.bound = largest_part(b);
  return b;
}

double TileSimCostModel::norm_row_chain_s(const Op& op) const {
  // The framework's norm kernel gives each row one CTA of kNormCtaThreads threads, each moving
  // one 16-byte vector per memory round trip, in two passes (sum of squares; then scale and
  // write): a row takes 2 round trips per chunk of kNormCtaThreads x 16 bytes, one after the
  // other. The measured norm floor already holds the first chunk's. A core keeps as many row
  // CTAs at once as its register file holds.
  const auto& hw = *hw_;
  const double chunk_bytes = kNormCtaThreads * kVectorAccessBytes;
  const double row_bytes = static_cast<double>(op.cols) * dtype_bytes(op.compute_dtype);
  const double round_trips = 2.0 * (ceil_div(row_bytes, chunk_bytes) - 1.0);
  const double ctas_per_core =
      std::max(1.0, std::floor(hw.core.register_file_bytes /
                               (kNormCtaThreads * kRegistersPerThread * kRegisterBytes)));
  const double waves = ceil_div(static_cast<double>(op.rows), hw.core_count * ctas_per_core);
  return waves * round_trips * hw.memory.latency_s;
}

TileSimBreakdown TileSimCostModel::simulate_noncontiguous(const Op& op) const {
  // Unfused RoPE runs on the transposed q/k views F.linear's output gives (and SiLU x mul on the
  // halves of a fused gate/up output on strided ones): PyTorch's generic
  // kernel, one narrow access per element, at its own measured share of the bandwidth; every
  // kernel streams a whole tensor, too large to stay in the global buffer for long prefills.
  const auto& hw = *hw_;
  TileSimBreakdown b;
  const double share = hw.efficiency.noncontiguous_memory > 0.0 ? hw.efficiency.noncontiguous_memory
                                                                : hw.efficiency.memory;
  b.memory_s = op.bytes() / (hw.memory.bandwidth_bps * share);
  b.vector_s = op.flops / hw.vector_peak_flops();
  b.core_s = b.vector_s;
  b.fixed_s =
      std::max(1, op.kernels) * hw.efficiency.kernel_floor(KernelKind::noncontiguous_elementwise);
  b.time_s = std::max(b.memory_s, b.core_s) + b.fixed_s;
  b.bound = largest_part(b);
  return b;
}

TileSimBreakdown TileSimCostModel::simulate_vector(const Op& op) const {
  const auto& hw = *hw_;
  TileSimBreakdown b;
  const double memory_bw = hw.memory.bandwidth_bps * hw.efficiency.memory;
  // Parameters and the KV cache come from main memory; activations from wherever they are.
  b.memory_s = (op.weight_bytes + op.kv_bytes) / memory_bw;
  const double activation_s = op.activation_bytes / stream_rate_bps(op.activation_bytes);
  (op.activation_bytes <= kResidentShare * hw.global_buffer_bytes ? b.global_s : b.memory_s) +=
      activation_s;
  b.vector_s =
      std::max(op.flops / hw.vector_peak_flops(),
               special_ops(op) / (hw.core.sfu_ops_per_cycle * hw.clock_hz * hw.core_count));
  if (is_norm(op) && op.rows > 0 && op.cols > 0) {
    b.local_s = norm_row_chain_s(op);
  } else if (op.rows > 0 && op.rows < hw.core_count) {
    // Few rows: one core per row, each limited by what it can keep in flight.
    const double core_rate = hw.memory_rate_per_core_bps();
    b.local_s = op.bytes() / static_cast<double>(op.rows) / core_rate;
  }
  b.fixed_s = std::max(1, op.kernels) *
              hw.efficiency.kernel_floor(is_norm(op) ? KernelKind::norm : KernelKind::elementwise);
  b.core_s = std::max(b.vector_s, b.local_s);
  b.time_s = std::max(b.memory_s + b.global_s, b.core_s) + b.fixed_s;
  b.bound = largest_part(b);
  return b;
}

TileSimBreakdown TileSimCostModel::simulate_collective(const Op& op) const {
  const auto& node = hw_->node;
  const double n = std::max(1, op.comm_devices);
  TileSimBreakdown b;
  if (n <= 1.0) return b;
  // Bandwidth one device gets towards the next in a ring: all its links through a switch;
  // its links to that one neighbour when fully connected; half its links on a ring.
  double ring_bw = node.link_bandwidth_bps;
  switch (node.topology) {
    case Topology::switched:
      ring_bw *= node.links_per_device;
      break;
    case Topology::fully_connected:
      ring_bw *= std::max(1.0, std::floor(node.links_per_device / (n - 1.0)));
      break;
    case Topology::ring:
      ring_bw *= std::max(1.0, node.links_per_device / 2.0);
      break;
  }
  const double bytes = op.comm_bytes;
  const double lat = node.link_latency_s;
  double ring_s = 0.0, tree_s = 0.0;
  if (op.kind == OpKind::all_reduce) {
    ring_s = 2.0 * (n - 1.0) / n * bytes / ring_bw + 2.0 * (n - 1.0) * lat;
    tree_s = 2.0 * std::ceil(std::log2(n)) * (lat + bytes / ring_bw);
  } else {  // all-gather (and reduce-scatter, the same volume)
    ring_s = (n - 1.0) / n * bytes / ring_bw + (n - 1.0) * lat;
    tree_s = std::ceil(std::log2(n)) * lat + (n - 1.0) / n * bytes / ring_bw;
  }
  b.communication_s = std::min(ring_s, tree_s);
  b.fixed_s = hw_->efficiency.kernel_in_stream_s;
  b.time_s = b.communication_s + b.fixed_s;
  b.mapping = ring_s <= tree_s ? "ring" : "tree";
  b.bound = "communication";
  return b;
}

TileSimBreakdown TileSimCostModel::simulate(const Op& op) const {
  switch (op.kind) {
    case OpKind::gemm:
    case OpKind::moe_gemm:
    case OpKind::attention_scores:
    case OpKind::attention_context:
      return simulate_gemm(op);
    case OpKind::attention:
      return simulate_attention(op);
    case OpKind::all_reduce:
    case OpKind::all_gather:
      return simulate_collective(op);
    case OpKind::rope:
      return simulate_noncontiguous(op);
    default:
      // Strided views (SiLU x mul on a fused gate/up output's halves) run the same generic
      // kernel as unfused RoPE.
      return op.strided_input ? simulate_noncontiguous(op) : simulate_vector(op);
  }
}

OpCost TileSimCostModel::price(const Op& op) const {
  TileSimBreakdown b = simulate(op);
  OpCost cost;
  cost.op_class = classify_op(op);
  cost.compute_s = std::max(b.compute_s, b.vector_s);
  cost.memory_s = std::max({b.local_s, b.global_s, b.memory_s});
  cost.latency_s = b.fixed_s + b.communication_s;
  cost.time_s = b.time_s;
  const std::string& bound = b.bound;
  cost.bound = bound == "compute" || bound == "vector" ? Bound::compute
               : bound == "fixed"                      ? Bound::latency
               : bound == "communication"              ? Bound::communication
                                                       : Bound::memory;
  const DType dtype =
      hw_->core.tensor.macs_per_cycle(op.compute_dtype) > 0.0 ? op.compute_dtype : DType::bf16;
  cost.ideal_s =
      std::max(op.flops / hw_->matrix_peak_flops(dtype), op.bytes() / hw_->memory.bandwidth_bps);
  return cost;
}

double TileSimCostModel::isolated_time_s(const Op& op) const {
  TileSimBreakdown b = simulate(op);
  if (op.kind == OpKind::all_reduce || op.kind == OpKind::all_gather) {
    return b.time_s - b.fixed_s + hw_->efficiency.kernel_isolated_s;
  }
  // Timed alone after an L2 flush (how operators are measured): nothing is resident, so every
  // byte comes from main memory, and the dirty lines the flush left are written back as the
  // op's traffic evicts them; that write-back stream also covers the memory pipeline's fill
  // (the ramp). The global buffer does not evict in stream order (hashed sets, no strict LRU):
  // each line the op brings in replaces a line of the buffer at random, so after B bytes a share
  // exp(-B / capacity) of the flush's dirty lines is still resident, and the write-back is
  // capacity x (1 - exp(-B / capacity)), not min(B, capacity) (issue 39: with the latter, GEMVs
  // of 13-70 MB were predicted 15% slow on average, up to 25%; docs/MEASUREMENTS.md section 38).
  // The fixed cost is the event-timed kernel's, not the in-graph one.
  const double memory_bw = hw_->memory.bandwidth_bps * hw_->efficiency.memory;
  const double read_s = std::max(b.memory_s, op.bytes() / memory_bw);
  const double capacity = hw_->global_buffer_bytes;
  const double write_back_s =
      capacity > 0.0 ? capacity * -std::expm1(-op.bytes() / capacity) / memory_bw : 0.0;
  return std::max(b.core_s, read_s + write_back_s) +
         (b.fixed_s - b.ramp_s - hw_->efficiency.kernel_in_stream_s) +
         hw_->efficiency.kernel_isolated_s;
}

nlohmann::json TileSimCostModel::describe(const Op& op) const {
  TileSimBreakdown b = simulate(op);
  if (b.mapping.empty()) return nullptr;
  return {{"mapping", b.mapping}};
}

}  // namespace inferlab
