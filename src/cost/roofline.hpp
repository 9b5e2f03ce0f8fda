#pragma once
#include "cost/cost_model.hpp"
#include "cost/delay_factors.hpp"
#include "hw/hardware_spec.hpp"

namespace inferlab {

// time = delay_factor[class] * max(compute time, memory time) + kernels * kernel latency.
// Compute time of GEMMs counts the FLOPs the tiling occupies (padding, partial waves, split-K);
// other ops run on the FP32 SIMT units. Memory time is bytes over HBM bandwidth.
// Collectives: ring algorithm over the interconnect, latency per hop plus bytes over bandwidth.
class RooflineCostModel : public CostModel {
 public:
  RooflineCostModel(HardwareSpec hardware, DelayFactors factors);
  OpCost price(const Op& op) const override;
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

}  // namespace inferlab
