#pragma once
#include <string>
#include <string_view>

namespace inferlab {

// What a foundry process gives a chip designer, for the area and cost model. Every figure has
// its source in process_node.cpp.
struct ProcessNode {
  std::string_view name;
  double peak_logic_mtr_per_mm2;  // densest standard cells, millions of transistors per mm^2
  // Cell height, in routing tracks (metal pitches), of the library the peak figure is for: 6 at
  // N7 and after (high-density cells), 7.5 at 16FF+ (see process_node.cpp).
  double peak_library_tracks;
  double sram_bitcell_um2;        // high-density 6T SRAM bit cell
  double wafer_cost_usd;          // one processed 300 mm wafer
  double defect_density_per_cm2;  // D0 of a mature process
  const char* source;
};

// InputError listing the known nodes for an unknown name.
const ProcessNode& process_node(std::string_view name);

}  // namespace inferlab
