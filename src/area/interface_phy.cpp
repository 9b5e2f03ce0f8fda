#include "area/interface_phy.hpp"

#include <array>
#include <span>
#include <string>
#include <vector>

#include "util/error.hpp"

namespace inferlab {

namespace {
// NVLink3/NVLink4, Infinity Fabric and PCIe4/PCIe5 PHY areas and controller sizes: the die-shot
// and RTL-derived figures of the LLMCompass cost model (Zhang et al., ISCA 2024: NVLink3
// 1.888 mm^2 and 74.6 M transistors per link, NVLink4 0.965 mm^2 and 86.6 M, Infinity Fabric
// 5.69 mm^2 and 348 M, PCIe4 0.48 mm^2 and 3.96 M per lane, PCIe5 0.64 mm^2 and 5.37 M).
// NVLink2, PCIe3 and TPU ICI are estimates scaled from those by signalling rate. The controller
// counts are LLMCompass's, sized at their 96.3 MTr/mm^2 for 7 nm: area_model.cpp converts them to
// its own density basis (issue 39, MEASUREMENTS section 41).
constexpr std::array<InterfacePhy, 5> kLinks = {{
    {"nvlink2", 2.2, 60.0, "estimate: NVLink3's PHY at 25 Gb/s NRZ signalling"},
    {"nvlink3", 1.888, 74.632, "LLMCompass cost model (ISCA 2024)"},
    {"nvlink4", 0.965, 86.628, "LLMCompass cost model (ISCA 2024)"},
    {"infinity_fabric", 5.69, 348.148, "LLMCompass cost model (ISCA 2024)"},
    {"ici", 4.0, 200.0, "estimate: a 4-lane 100 Gb/s-class SerDes link per TPU ICI port"},
}};
constexpr std::array<InterfacePhy, 3> kHosts = {{
    {"pcie3", 0.40, 3.0, "estimate: PCIe4's PHY at half the rate"},
    {"pcie4", 0.48, 3.9625, "LLMCompass cost model (ISCA 2024)"},
    {"pcie5", 0.64, 5.3721, "LLMCompass cost model (ISCA 2024)"},
}};

const InterfacePhy& find(std::span<const InterfacePhy> table, std::string_view kind,
                         const char* what) {
  std::vector<std::string> known;
  for (const auto& phy : table) {
    if (phy.kind == kind) return phy;
    known.emplace_back(phy.kind);
  }
  throw InputError("unknown " + std::string(what) + " '" + std::string(kind) +
                   "'; known: " + join_names(known));
}
}  // namespace

const InterfacePhy& link_phy(std::string_view kind) {
  return find(kLinks, kind, "link kind");
}
const InterfacePhy& host_phy(std::string_view kind) {
  return find(kHosts, kind, "host bus");
}

}  // namespace inferlab
