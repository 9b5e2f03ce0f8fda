#include "area/area_model.hpp"

#include <fmt/format.h>

#include "area/interface_phy.hpp"
#include "area/process_node.hpp"
#include "hw/memory_technology.hpp"

namespace inferlab {

namespace {
// Arithmetic units, in transistors. A 64-bit FMA unit has about 685k (the OpenPiton/Ariane FPU
// figure the LLMCompass cost model uses); a multiplier array grows with the square of the
// significand, so an fp32 FMA (24-bit significand) is 685k x (24/53)^2 and a tensor-unit MAC
// (fp16/bf16 inputs, at most 11-bit significands, fp32 accumulation) 685k x (11/53)^2. An
// int32 lane (multiplier and ALU) is Ariane's 178k.
constexpr double kFp64FmaTransistors = 685.3e3;
constexpr double kFp32FmaTransistors = kFp64FmaTransistors * (24.0 / 53.0) * (24.0 / 53.0);
constexpr double kTensorMacTransistors = kFp64FmaTransistors * (11.0 / 53.0) * (11.0 / 53.0);
constexpr double kInt32LaneTransistors = 177.69e3;
// A special-function unit (range reduction, table, polynomial): about two fp32 FMAs
// (estimate).
constexpr double kSfuTransistors = 2.0 * kFp32FmaTransistors;
// The on-chip network port and crossbar share of one core (LLMCompass's A100 figure, 55 M).
constexpr double kNetworkTransistorsPerCore = 55e6;

// Laid-out logic reaches a fraction of the node's peak density: fast GPU logic uses 7.5-track
// cells placed at about 85% utilisation (estimate). Where the node's peak figure is for 6-track
// cells (N7 and after) that is 6/7.5 x 0.85 = 0.68 of it; at 16FF+, whose figure is already for
// 7.5-track cells (process_node.cpp), 0.85 of it (issue 39: 0.68 there too before).
constexpr double kGpuLibraryTracks = 7.5;
constexpr double kPlacementUtilisation = 0.85;

// SRAM arrays: bit cells over array efficiency. AMD's 3D V-Cache die puts 64 MB in 41 mm^2 at
// N7 (ISSCC 2022), 0.354 of the area its 537 Mbit of 0.027 um^2 cells would take: tags,
// sense amplifiers, redundancy and wiring included. Caches and shared memory use that;
// register files have 2-3 ports per cell, about twice the cell area (estimate).
constexpr double kCacheArrayEfficiency = 0.354;
constexpr double kRegisterFileCellFactor = 2.0;

struct Builder {
  const ProcessNode& node;
  AreaEstimate& out;
  double logic_mtr_per_mm2() const {
    return node.peak_logic_mtr_per_mm2 * node.peak_library_tracks / kGpuLibraryTracks *
           kPlacementUtilisation;
  }
  void logic(std::string name, double transistors, std::string basis) {
    out.components.push_back(
        {std::move(name), transistors / 1e6 / logic_mtr_per_mm2(), transistors, std::move(basis)});
  }
  void sram(std::string name, double bytes, double cell_factor, std::string basis) {
    const double bits = bytes * 8.0;
    const double mm2 = bits * node.sram_bitcell_um2 * cell_factor / kCacheArrayEfficiency * 1e-6;
    out.components.push_back({std::move(name), mm2, 6.0 * bits, std::move(basis)});
  }
  void analog(std::string name, double mm2, std::string basis) {
    out.components.push_back({std::move(name), mm2, 0.0, std::move(basis)});
  }
};
}  // namespace

AreaEstimate estimate_area(const HardwareTemplate& hw) {
  AreaEstimate out;
  out.process_node = hw.process_node;
  out.physical_cores = hw.physical_core_count;
  out.enabled_cores = hw.core_count;
  Builder b{process_node(hw.process_node), out};
  const double cores = hw.physical_core_count;
  const auto& c = hw.core;

  const double macs = cores * c.tensor.per_core * c.tensor.rows * c.tensor.cols;
  b.logic("tensor_units", macs * kTensorMacTransistors,
          fmt::format("{:.0f} MACs x {:.0f} transistors", macs, kTensorMacTransistors));
  const double vector_tr =
      cores * (c.vector_lanes * kFp32FmaTransistors + c.int32_lanes * kInt32LaneTransistors +
               c.fp64_lanes * kFp64FmaTransistors + c.sfu_ops_per_cycle * kSfuTransistors);
  b.logic("vector_units", vector_tr,
          fmt::format("per core {} fp32 + {} int32 + {} fp64 lanes + {:g} SFUs", c.vector_lanes,
                      c.int32_lanes, c.fp64_lanes, c.sfu_ops_per_cycle));
  const double lanes = cores * (c.vector_lanes + c.int32_lanes + c.fp64_lanes);
  b.logic(
      "core_control", lanes * kControlTransistorsPerLane,
      fmt::format("{:.0f} lanes x {:.3g} transistors (fitted)", lanes, kControlTransistorsPerLane));
  b.sram("register_files", cores * c.register_file_bytes, kRegisterFileCellFactor,
         fmt::format("{:.0f} KiB per core, multi-ported cells", c.register_file_bytes / 1024));
  b.sram("local_buffers", cores * c.local_buffer_bytes, 1.0,
         fmt::format("{:.0f} KiB per core", c.local_buffer_bytes / 1024));
  b.logic(
      "on_chip_network", cores * kNetworkTransistorsPerCore,
      fmt::format("{:.0f} cores x {:.0f} M transistors", cores, kNetworkTransistorsPerCore / 1e6));
  double per_core_mm2 = 0.0;
  for (const auto& part : out.components) per_core_mm2 += part.area_mm2;
  out.core_area_mm2 = per_core_mm2 / cores;

  b.sram("global_buffer", hw.global_buffer_physical_bytes, 1.0,
         fmt::format("{:.0f} MiB on the die", hw.global_buffer_physical_bytes / (1 << 20)));
  const MemoryTechnology& mem = memory_technology(hw.memory.type);
  const int mem_phys = hw.memory.phys_on_die;
  b.analog("memory_phys", mem_phys * mem.phy_area_mm2_per_channel,
           fmt::format("{} {} PHYs x {:g} mm^2", mem_phys, memory_type_name(hw.memory.type),
                       mem.phy_area_mm2_per_channel));
  b.logic(
      "memory_controllers", mem_phys * mem.controller_mtransistors_per_channel * 1e6,
      fmt::format("{} x {:g} M transistors", mem_phys, mem.controller_mtransistors_per_channel));
  const InterfacePhy& link = link_phy(hw.node.link_kind);
  const int links = hw.node.links_per_device;
  b.analog("link_phys", links * link.phy_mm2_per_unit,
           fmt::format("{} {} links x {:g} mm^2", links, link.kind, link.phy_mm2_per_unit));
  b.logic("link_controllers", links * link.controller_mtransistors_per_unit * 1e6,
          fmt::format("{} x {:g} M transistors", links, link.controller_mtransistors_per_unit));
  if (!hw.host_bus.empty()) {
    const InterfacePhy& host = host_phy(hw.host_bus);
    b.analog("host_phy", hw.host_bus_lanes * host.phy_mm2_per_unit,
             fmt::format("{} x{} at {:g} mm^2 per lane", host.kind, hw.host_bus_lanes,
                         host.phy_mm2_per_unit));
    b.logic("host_controller", hw.host_bus_lanes * host.controller_mtransistors_per_unit * 1e6,
            fmt::format("{} lanes x {:g} M transistors", hw.host_bus_lanes,
                        host.controller_mtransistors_per_unit));
  }
  for (const auto& part : out.components) {
    out.die_area_mm2 += part.area_mm2;
    out.transistors += part.transistors;
  }
  return out;
}

}  // namespace inferlab
