#pragma once
#include "hw/hardware_template.hpp"

namespace inferlab {

// What one channel of a main-memory technology gives and costs: used to build what-if memory
// systems (explore --vary memory=...) and by the area and cost model. A channel is the unit a
// PHY is counted in: one HBM stack (1024 bits), one 64-bit DDR5/LPDDR5 channel, one 32-bit
// GDDR6 channel. Every figure has its source in the .cpp.
struct MemoryTechnology {
  MemoryType type;
  double bandwidth_per_channel_bps;
  double capacity_per_channel_bytes;
  int default_channels;                        // a plausible accelerator memory system of this type
  double phy_area_mm2_per_channel;             // analog PHY: does not shrink with the node
  double controller_mtransistors_per_channel;  // digital controller: shrinks with the node
  double cost_usd_per_gb;
  const char* source;
};
const MemoryTechnology& memory_technology(MemoryType type);

}  // namespace inferlab
