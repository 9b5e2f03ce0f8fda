#include "cost/roofline.hpp"

#include <algorithm>
#include <utility>

#include "cost/gemm_tiling.hpp"
#include "util/error.hpp"

namespace inferlab {

RooflineCostModel::RooflineCostModel(HardwareSpec hardware, DelayFactors factors)
    : hardware_(std::move(hardware)), factors_(std::move(factors)) {}

double floor_isolated_time_s(double in_stream_s, int kernels, double kernel_latency_s,
                             double floor_s) {
  const double in_stream_work_s = in_stream_s - kernels * kernel_latency_s;
  return in_stream_work_s + floor_s + (kernels - 1) * kernel_latency_s;
}

double RooflineCostModel::isolated_time_s(const Op& op) const {
  const double in_stream_s = price(op).time_s;
  if (!(factors_.single_op_floor_s > 0.0)) return in_stream_s;
  return floor_isolated_time_s(in_stream_s, op.kernels, factors_.kernel_latency_s,
                               factors_.single_op_floor_s);
}

OpClass RooflineCostModel::classify(const Op& op) const {
  return classify_op(op, factors_.gemv_max_rows);
}

double RooflineCostModel::matrix_peak(DType dtype) const {
  if (auto peak = hardware_.peak_flops(dtype)) return *peak;
  // 16-bit formats share one rate on every shipped GPU; fall back between them.
  if (dtype == DType::bf16 || dtype == DType::fp16) {
    if (auto other = hardware_.peak_flops(dtype == DType::bf16 ? DType::fp16 : DType::bf16)) {
      return *other;
    }
  }
  throw InputError(hardware_.name + " has no " + std::string(dtype_name(dtype)) +
                   " matrix units; it supports: " + join_names(hardware_.supported_dtype_names()));
}

OpCost RooflineCostModel::price_collective(const Op& op) const {
  OpCost cost;
  cost.op_class = OpClass::communication;
  cost.bound = Bound::communication;
  const int n = op.comm_devices;
  if (n <= 1) return cost;
  const auto& link = hardware_.interconnect;
  double steps = op.kind == OpKind::all_reduce ? 2.0 * (n - 1) : static_cast<double>(n - 1);
  // Ring: each step moves 1/n of the payload (all-reduce) or one device's payload (gather).
  double bytes_moved =
      op.kind == OpKind::all_reduce ? steps * op.comm_bytes / n : steps * op.comm_bytes;
  double transfer_s = bytes_moved / link.bandwidth_bps;
  cost.ideal_s = transfer_s;
  cost.memory_s = factors_.of(OpClass::communication) * transfer_s;
  cost.latency_s = steps * link.latency_s;
  // A measured NCCL curve for this collective and device count replaces the link's bandwidth
  // (NCCL reaches well under it: 175 GB/s algorithm bandwidth for a 16 MiB all-reduce over two
  // H200s against the sheet's 450 GB/s); it already holds what a delay factor would correct.
  const Collective kind =
      op.kind == OpKind::all_reduce ? Collective::all_reduce : Collective::all_gather;
  if (hardware_.profile) {
    if (const auto* curve = hardware_.profile->in_stream_collectives.nccl_graph.find(kind, n)) {
      // NCCL timed per call inside a CUDA graph, back to back: the whole call, its latency
      // included, without the host's launch (eager steps' launches are the host model's).
      cost.memory_s = curve->call_s(op.comm_bytes);
      cost.latency_s = 0.0;
    } else if (const auto* host_curve = hardware_.profile->collectives.find(kind, n)) {
      cost.memory_s = host_curve->transfer_s(op.comm_bytes);
    }
  }
  cost.time_s = cost.memory_s + cost.latency_s;
  return cost;
}

OpCost RooflineCostModel::price(const Op& op) const {
  if (op.kind == OpKind::all_reduce || op.kind == OpKind::all_gather) {
    return price_collective(op);
  }
  OpCost cost;
  cost.op_class = classify(op);
  const double bandwidth = hardware_.memory_bandwidth_bps;
  const double bytes = op.bytes();
  double peak = 0.0, occupied_flops = op.flops;
  switch (op.kind) {
    case OpKind::gemm:
    case OpKind::moe_gemm:
    case OpKind::attention_scores:
    case OpKind::attention_context:
      peak = matrix_peak(op.compute_dtype);
      occupied_flops = choose_gemm_tiling(op.gemm, hardware_.sm_count).occupied_flops;
      break;
    case OpKind::attention:
      peak = matrix_peak(op.compute_dtype);
      break;
    default:
      peak = hardware_.peak_flops(DType::fp32).value_or(matrix_peak(DType::fp16) / 8);
  }
  const double factor = factors_.of(cost.op_class);
  cost.ideal_s = std::max(op.flops / peak, bytes / bandwidth);
  cost.compute_s = factor * occupied_flops / peak;
  cost.memory_s = factor * bytes / bandwidth;
  cost.latency_s = op.kernels * factors_.kernel_latency_s;
  cost.combine_parts();
  return cost;
}

}  // namespace inferlab
