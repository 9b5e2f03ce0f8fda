#pragma once
#include <string_view>

namespace inferlab {

// The off-chip interfaces other than main memory: device-to-device links and the host bus.
// The PHY (analog, does not shrink with the node) is in mm^2; the controller (digital) in
// millions of transistors. Sources in interface_phy.cpp.
struct InterfacePhy {
  std::string_view kind;
  double phy_mm2_per_unit;  // per link, or per host lane
  double controller_mtransistors_per_unit;
  const char* source;
};

// Device links by the template's node.link_kind: nvlink2, nvlink3, nvlink4, infinity_fabric,
// ici. Host buses: pcie3, pcie4, pcie5, per lane. InputError listing the known kinds.
const InterfacePhy& link_phy(std::string_view kind);
const InterfacePhy& host_phy(std::string_view kind);

}  // namespace inferlab
