#pragma once
#include "cost/cost_model.hpp"
#include "cost/delay_factors.hpp"
#include "hw/hardware_spec.hpp"

namespace inferlab {

// time = delay_factor[class] * max(compute time, memory time) + kernels * kernel latency.
// Compute time of GEMMs counts the FLOPs the tiling occupies (padding, partial waves, split-K);
// other ops run on the FP32 SIMT units. Memory time is bytes over HBM bandwidth.
// Collectives: ring algorithm over the interconnect, latency per hop plus bytes over bandwidth.
// Timed alone, an op pays the factors' single-op floor instead of its first kernel's latency
// (floor_isolated_time_s); factors without a floor give the in-stream time.
class RooflineCostModel : public CostModel {
 public:
  RooflineCostModel(HardwareSpec hardware, DelayFactors factors);
  OpCost price(const Op& op) const override;
  double isolated_time_s(const Op& op) const override;
  std::string name() const override { return "roofline"; }

  OpClass classify(const Op& op) const;
  // Peak FLOP/s of the matrix units for dtype (16-bit formats stand in for each other);
  // InputError when the GPU has none.
  double matrix_peak_of(DType dtype) const { return matrix_peak(dtype); }
  OpCost price_collective(const Op& op) const;
  const HardwareSpec& hardware() const { return hardware_; }
  const DelayFactors& factors() const { return factors_; }

 private:
  double matrix_peak(DType dtype) const;

  HardwareSpec hardware_;
  DelayFactors factors_;
};

// An op timed alone, from its in-stream time: the fixed cost of one call timed alone
// (`floor_s`, launch and events) in place of its first kernel's in-stream latency.
double floor_isolated_time_s(double in_stream_s, int kernels, double kernel_latency_s,
                             double floor_s);

}  // namespace inferlab
