#include "area/process_node.hpp"

#include <array>
#include <string>
#include <vector>

#include "util/error.hpp"

namespace inferlab {

namespace {
// Peak logic densities: TSMC figures as tabulated by WikiChip (16FF+ 28.9, N7 91.2, N5 171.3
// MTr/mm^2); N6 is TSMC's "18% denser than N7"; N4 is TSMC's "6% smaller area than N5".
// SRAM bit cells: TSMC's published high-density 6T cells (16FF+ 0.074, N7 0.027, N5 0.021 um^2;
// N6 and N4 reuse N7's and N5's). Wafer costs: CSET, "AI Chips: What They Are and Why They
// Matter" (2020), 16/12 nm 3,984 USD, 7 nm 9,346, 5 nm 16,988; N6 and N4 are estimates a
// little above N7 and N5. Defect densities: TSMC 2020 Technology Symposium as reported by
// AnandTech (N7 about 0.09 per cm^2 at volume, N5 below N7 at the same point of its ramp);
// 0.07 for N5/N4 and 0.05 for the old 16 nm are estimates for mature lines.
// Library track heights (issue 39): N7's figure is for its high-density 6-track cell (240 nm =
// 6 x 40 nm metal pitch; WikiChip, TSMC N7); N6, N5 and N4 are derived from N7's by TSMC's
// scaling claims, so the same 6-track basis. 16FF+'s 28.9 is for a 7.5-track cell: with
// WikiChip's pitches (contacted poly 90 nm, metal 64 nm) a 3-pitch NAND2 is 3 x 90 x 480 nm^2 at
// 7.5 tracks (480 nm), 30.9 MTr/mm^2, and N7's ratio of the weighted figure to the NAND2 alone
// (91.2 / (4 / (3 x 57 x 240 nm^2)) = 0.935) gives 28.9; at 9 tracks (576 nm) it would be 24.0.
// Worked out here from the published pitches, not a published statement.
constexpr std::array<ProcessNode, 5> kNodes = {{
    {"N16", 28.9, 7.5, 0.074, 3984.0, 0.05, "TSMC 16FF+ (WikiChip density, CSET 2020 wafer cost)"},
    {"N7", 91.2, 6.0, 0.027, 9346.0, 0.09, "TSMC N7 (WikiChip density, CSET 2020 wafer cost)"},
    {"N6", 107.6, 6.0, 0.027, 10000.0, 0.09, "TSMC N6: N7 +18% logic density; wafer cost estimate"},
    {"N5", 171.3, 6.0, 0.021, 16988.0, 0.07, "TSMC N5 (WikiChip density, CSET 2020 wafer cost)"},
    {"N4", 182.2, 6.0, 0.021, 17500.0, 0.07, "TSMC N4: N5 -6% area; wafer cost estimate"},
}};
}  // namespace

const ProcessNode& process_node(std::string_view name) {
  std::vector<std::string> known;
  for (const auto& node : kNodes) {
    if (node.name == name) return node;
    known.emplace_back(node.name);
  }
  throw InputError("unknown process node '" + std::string(name) + "'; known: " + join_names(known));
}

}  // namespace inferlab
