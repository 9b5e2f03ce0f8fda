#include "area/die_cost.hpp"

#include <cmath>
#include <numbers>

#include "area/process_node.hpp"
#include "hw/memory_technology.hpp"

namespace inferlab {

namespace {
// Negative-binomial clustering parameter: 3 is the usual choice for logic (Cunningham 1990;
// also the value in the Hennessy & Patterson die-cost exercises' modern form).
constexpr double kClustering = 3.0;
// Packaging (estimates, labelled so in docs/MEASUREMENTS.md section 9): HBM designs sit on a
// silicon interposer (CoWoS-S) that spans the die and the stacks with 10% margin, at the cost
// of a passive 65 nm-class wafer (about 3,000 USD over 70,000 usable mm^2), plus substrate and
// assembly; designs with off-package DRAM need only an organic substrate and assembly.
constexpr double kInterposerUsdPerMm2 = 3000.0 / 70000.0;
constexpr double kHbmStackFootprintMm2 = 110.0;  // about 11 x 10 mm per stack
constexpr double kInterposerMargin = 1.1;
constexpr double kHbmSubstrateAssemblyUsd = 150.0;
constexpr double kOrganicPackageUsd = 80.0;

bool is_hbm(MemoryType type) {
  return type == MemoryType::hbm2 || type == MemoryType::hbm2e || type == MemoryType::hbm3 ||
         type == MemoryType::hbm3e;
}
}  // namespace

double dies_per_wafer(double die_area_mm2, double wafer_diameter_mm) {
  const double r = wafer_diameter_mm / 2.0;
  const double gross = std::numbers::pi * r * r / die_area_mm2 -
                       std::numbers::pi * wafer_diameter_mm / std::sqrt(2.0 * die_area_mm2);
  return std::max(0.0, gross);
}

double negative_binomial_yield(double area_mm2, double defects_per_cm2, double clustering) {
  return std::pow(1.0 + area_mm2 / 100.0 * defects_per_cm2 / clustering, -clustering);
}

double redundant_yield(int total, int needed, double unit_yield) {
  // Sum over k = number of bad units allowed: C(total, k) q^k p^(total-k), in logs so that
  // large core counts do not overflow.
  double sum = 0.0;
  const double p = unit_yield, q = 1.0 - unit_yield;
  for (int bad = 0; bad <= total - needed; ++bad) {
    if (q <= 0.0 && bad > 0) break;
    const double log_term = std::lgamma(total + 1.0) - std::lgamma(bad + 1.0) -
                            std::lgamma(total - bad + 1.0) + (bad > 0 ? bad * std::log(q) : 0.0) +
                            (total - bad) * std::log(p);
    sum += std::exp(log_term);
  }
  return std::min(1.0, sum);
}

DieCost die_cost(const AreaEstimate& area) {
  const ProcessNode& node = process_node(area.process_node);
  DieCost c;
  c.wafer_cost_usd = node.wafer_cost_usd;
  c.dies_per_wafer = dies_per_wafer(area.die_area_mm2);
  const double cores_mm2 = area.core_area_mm2 * area.physical_cores;
  const double uncore_mm2 = area.die_area_mm2 - cores_mm2;
  const double core_yield =
      negative_binomial_yield(area.core_area_mm2, node.defect_density_per_cm2, kClustering);
  c.yield = negative_binomial_yield(uncore_mm2, node.defect_density_per_cm2, kClustering) *
            redundant_yield(area.physical_cores, area.enabled_cores, core_yield);
  c.good_dies_per_wafer = c.dies_per_wafer * c.yield;
  c.die_cost_usd = c.good_dies_per_wafer > 0.0 ? c.wafer_cost_usd / c.good_dies_per_wafer
                                               : std::numeric_limits<double>::infinity();
  return c;
}

DeviceCost device_cost(const HardwareTemplate& hw, const AreaEstimate& area) {
  DeviceCost d;
  d.die = die_cost(area);
  d.memory_cost_usd =
      hw.memory.capacity_bytes / 1e9 * memory_technology(hw.memory.type).cost_usd_per_gb;
  if (is_hbm(hw.memory.type)) {
    const double interposer_mm2 =
        kInterposerMargin * (area.die_area_mm2 + hw.memory.channels * kHbmStackFootprintMm2);
    d.package_cost_usd = interposer_mm2 * kInterposerUsdPerMm2 + kHbmSubstrateAssemblyUsd;
  } else {
    d.package_cost_usd = kOrganicPackageUsd;
  }
  d.total_cost_usd = d.die.die_cost_usd + d.memory_cost_usd + d.package_cost_usd;
  return d;
}

}  // namespace inferlab
