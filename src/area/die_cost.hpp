#pragma once
#include "area/area_model.hpp"
#include "hw/hardware_template.hpp"

namespace inferlab {

// What one good die costs: dies per 300 mm wafer, yield under a negative-binomial defect model
// with spare cores (a die is good when its uncore has no killer defect and at least
// `enabled_cores` of its `physical_cores` do not), wafer cost over good dies.
struct DieCost {
  double dies_per_wafer = 0.0;
  double yield = 0.0;
  double good_dies_per_wafer = 0.0;
  double wafer_cost_usd = 0.0;
  double die_cost_usd = 0.0;
};

// Gross dies of `die_area_mm2` (square) on a wafer of `wafer_diameter_mm`, edge loss included:
// pi r^2 / A - pi d / sqrt(2 A).
double dies_per_wafer(double die_area_mm2, double wafer_diameter_mm = 300.0);
// Negative-binomial (clustered) yield of `area_mm2` at `defects_per_cm2`: (1 + A D0 / a)^-a.
double negative_binomial_yield(double area_mm2, double defects_per_cm2, double clustering = 3.0);
// P(at least `needed` of `total` units are good) when each is good with `unit_yield`.
double redundant_yield(int total, int needed, double unit_yield);

DieCost die_cost(const AreaEstimate& area);

// The accelerator's bill of materials beyond the die: its main memory and its package.
struct DeviceCost {
  DieCost die;
  double memory_cost_usd = 0.0;
  double package_cost_usd = 0.0;
  double total_cost_usd = 0.0;
};
DeviceCost device_cost(const HardwareTemplate& hardware, const AreaEstimate& area);

}  // namespace inferlab
