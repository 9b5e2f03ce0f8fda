#pragma once
#include <string>
#include <vector>

#include "hw/hardware_template.hpp"

namespace inferlab {

// One part of the die: its area and what it was worked out from.
struct AreaComponent {
  std::string name;  // tensor_units, vector_units, core_control, register_files, ...
  double area_mm2 = 0.0;
  double transistors = 0.0;  // 0 for analog PHYs
  std::string basis;         // the count and the constant, in words
};

// The die of a hardware template, part by part (LLMCompass-style bottom-up model). Logic is
// counted in transistors and laid out at a fraction of the node's peak density; SRAM from its
// bit count, the node's bit cell and an array efficiency; PHYs at their fixed analog area.
// Everything on the die counts: disabled (spare) cores and cache slices, spare memory PHYs.
struct AreaEstimate {
  std::string process_node;
  std::vector<AreaComponent> components;
  double die_area_mm2 = 0.0;
  double transistors = 0.0;
  double core_area_mm2 = 0.0;  // one core, everything in it (the unit of redundancy)
  int physical_cores = 0, enabled_cores = 0;
};

AreaEstimate estimate_area(const HardwareTemplate& hardware);

// The one constant of the model no public figure gives: the transistors of a core's control
// and data-movement logic (schedulers, dispatch, load/store and address units, caches' tags
// and crossbars inside the core) per arithmetic lane. Fitted so that the relative errors on
// the two published dies the issue names (A100 826 mm^2, H100 814 mm^2) are equal and
// opposite; see docs/MEASUREMENTS.md sections 9 and 41 (1.08 M before section 41 took the L2 and
// the LLMCompass budgets from the GA100 die shot; with them the A100's SM comes to 4.17 mm^2,
// against 3.75 on the die shot).
inline constexpr double kControlTransistorsPerLane = 0.964e6;

}  // namespace inferlab
