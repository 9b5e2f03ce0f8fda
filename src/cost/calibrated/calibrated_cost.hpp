#pragma once
#include "cost/calibrated/calibrated_params.hpp"
#include "cost/cost_model.hpp"
#include "cost/roofline.hpp"
#include "hw/hardware_spec.hpp"

namespace inferlab {

// The tile/wave structure a calibrated GEMM price came from (for reports and tests).
struct GemmWavePlan {
  int64_t tile_m = 0, tile_n = 0, split_k = 1, ctas = 0, waves = 0;
  bool stream_k = false;
  double compute_s = 0.0, memory_s = 0.0, fixed_s = 0.0, time_s = 0.0;
};

// Operand bytes per second one GEMM CTA with a tile_m x tile_n output tile streams: the
// k-block stages of its shared-memory ring that cuBLAS's Hopper kernels keep in flight, each
// for `load_latency_s` (Little's law).
double tile_operand_stream_bps(double tile_m, double tile_n, double element_bytes,
                               double load_latency_s);

// Two parts of a kernel that overlap only in part: (compute^p + memory^p)^(1/p); p = 1 adds
// them, a large p approaches the longer one.
double overlapped_s(double compute_s, double memory_s, double exponent);

// SM-bound work that takes `boost_s` at the boost clock, run from a cool start under a clock
// that sinks towards the power cap's: the slowdown grows as 1 + drop (1 - exp(-t / settle)).
double clock_dragged_s(double boost_s, double drop, double settle_s);

// Operator cost fitted to measurements, generalising by the structure of the kernels rather
// than by looking measurements up (cost/calibrated/calibrated_params.hpp has the parameters):
//  * GEMM: the output is cut into tiles (the tile shapes cuBLAS's own kernels use, split-K when
//    the tiles underfill the SMs); tiles run in waves over the SMs, each tile's time being its
//    FLOPs over a fitted share of the per-SM matrix peak, its operand bytes over a fitted
//    per-CTA streaming rate (the operand ring's bytes in flight over a fitted load latency)
//    or the operand bytes of all its CTAs in flight over a fitted L2 feed rate (the streams
//    at fitted shares when k rows do not start on 128-byte lines), whichever is longest, plus a
//    fixed cost per wave, all slowed as the clock sinks over a long GEMM; that work and the GEMM's
//    HBM traffic (at a fitted share of the bandwidth) overlap to a fitted degree. The cheapest
//    tiling is the one priced, as a library heuristic would pick it, within the choices cuBLAS
//    makes (split-K only for few tiles and long k; a few token rows on 8- or 16-row tiles).
//  * FlashAttention prefill: query tiles of 128 rows per (sequence, head) in waves, the longest
//    causal tile bounding the wave; decode: one CTA per (sequence, KV head) streaming its KV,
//    bounded by HBM bandwidth.
//  * RMSNorm: HBM bandwidth at a fitted share, or, when rows are few, the chain of memory
//    round trips one CTA takes to walk its row twice (the kernel's threads and vector width
//    set the chain's length, a fitted round-trip time its pace);
//  * softmax/sampling: HBM bandwidth at a fitted share, or one CTA per row streaming at a
//    fitted rate when rows are few; elementwise kernels: HBM bandwidth at a fitted share plus
//    a fixed cost (a share and a cost of their own on strided views, where PyTorch cannot
//    vectorize).
// Times are in-stream: what each kernel adds to a step run back to back (a CUDA graph), the
// gap between kernels included. Collectives are priced by the roofline model's ring formula.
class CalibratedCostModel : public CostModel {
 public:
  CalibratedCostModel(HardwareSpec hardware, CalibratedParams params, DelayFactors comm_factors);
  OpCost price(const Op& op) const override;
  std::string name() const override { return "calibrated"; }
  double sustained_compute_slowdown() const override {
    return params_[CalibParam::sustained_compute_slowdown];
  }

  // An op timed alone with CUDA events right after an L2 flush, which is how reference
  // operators are measured: the in-stream time plus the event overhead plus the write-back of
  // the dirty lines the flush left in L2 that the op's traffic evicts.
  double isolated_time_s(const Op& op) const override;
  // A GEMM's tiling: the tile cuBLAS would run, the split of k, the CTAs and their waves
  // (tile_m, tile_n, split_k, stream_k, ctas, waves); null for other ops.
  nlohmann::json describe(const Op& op) const override;
  GemmWavePlan plan_gemm(const Op& op) const;
  // Share of a GEMM tile's operand stream kept when the operands' k rows are `row_bytes`
  // long: 1 when every row starts on a 128-byte line, a fitted share for each offset.
  double row_alignment_share(double row_bytes) const;

  const HardwareSpec& hardware() const { return hardware_; }
  const CalibratedParams& params() const { return params_; }

 private:
  double matrix_peak(DType dtype) const { return roofline_.matrix_peak_of(dtype); }
  OpCost price_gemm(const Op& op, const GemmWavePlan& plan) const;
  OpCost price_attention(const Op& op) const;
  OpCost price_norm(const Op& op) const;
  OpCost price_softmax(const Op& op) const;
  OpCost price_row_reduction(const Op& op, double efficiency, double fixed_s, double row_stream_bps,
                             double rows_per_sm) const;
  OpCost price_streaming(const Op& op, double efficiency, double fixed_s) const;

  HardwareSpec hardware_;
  CalibratedParams params_;
  RooflineCostModel roofline_;  // classification, matrix peaks and collectives
};

}  // namespace inferlab
