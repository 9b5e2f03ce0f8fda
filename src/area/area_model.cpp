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
// A ray-tracing core (a graphics part, listed by the templates that have one): a die-shot
// comparison of TU106 (RT and tensor cores) with TU116 (neither), both TSMC 12FFN, puts the two
// RT cores of a TPC at 0.7 mm^2 and its 16 tensor cores at 1.25 mm^2 (Reddit user Qesa, reported
// by TechPowerUp, February 2019). 0.35 mm^2 at this model's 16 nm-class logic density (28.9 x
// 0.85 = 24.565 MTr/mm^2) is 8.6 M transistors. The same measurement checks the tensor MAC above:
// 1.25 mm^2 over 16 x 64 MACs is 30.0 k transistors per MAC at that density, against 29.5 k. An
// Ada (third-generation) RT core doubles the triangle-intersection rate; it is counted at the
// first generation's size, so the AD102 check errs small here.
constexpr double kRtCoreTransistors = 0.35 * 24.565e6;

// Laid-out logic reaches a fraction of the node's peak density: fast GPU logic uses 7.5-track
// cells placed at about 85% utilisation (estimate). Where the node's peak figure is for 6-track
// cells (N7 and after) that is 6/7.5 x 0.85 = 0.68 of it; at 16FF+, whose figure is already for
// 7.5-track cells (process_node.cpp), 0.85 of it (issue 39: 0.68 there too before).
constexpr double kGpuLibraryTracks = 7.5;
constexpr double kPlacementUtilisation = 0.85;

// LLMCompass's transistor budgets (the on-chip network above; the memory, link and host
// controllers of memory_technology.cpp and interface_phy.cpp, and the estimates scaled from
// them) were sized from GA100 and MI210 die-shot areas at 96.3 MTr/mm^2 for 7 nm (their
// cost_model.py divides by supply_chain_model.py's transistor_density_arr, CSET "AI Chips" 2020).
// Laid out here at N7's GPU density (62.0 MTr/mm^2) they would take 1.55x the areas they were
// measured at, so each is taken at 62.0 / 96.3 of its count (MEASUREMENTS section 41). Check
// against the GA100 die shot (LLMCompass, ISCA 2024, ae/figure6/real_hardware/die_area.csv):
// on-chip interconnect 73.1 mm^2 here against 76.44 measured, memory controllers 34.5
// against 31.77.
constexpr double kLlmCompassN7MtrPerMm2 = 96.3;

// SRAM arrays: bit cells over array efficiency. AMD's 3D V-Cache die puts 64 MB in 41 mm^2 at
// N7 (ISSCC 2022), 0.354 of the area its 537 Mbit of 0.027 um^2 cells would take: tags,
// sense amplifiers, redundancy and wiring included. The cores' buffers use that; register files
// have 2-3 ports per cell, about twice the cell area (estimate).
constexpr double kCacheArrayEfficiency = 0.354;
constexpr double kRegisterFileCellFactor = 2.0;
// The global buffer (a GPU's L2: many banked slices, their tags, ECC and ports) is far less
// dense: on the GA100 die shot its 48 MiB take 119.31 mm^2 (LLMCompass, ISCA 2024,
// ae/figure6/real_hardware/die_area.csv, "Global buffer" of the real GA100), 0.0911 of what
// the bits would take in N7's 0.027 um^2 cells. Other nodes scale it by their bit cell, as
// SRAM does (N7 to N4 0.78x, where logic shrinks 0.50x). 0.354 here too before section 41.
constexpr double kGa100L2DieShotMm2 = 119.31;
constexpr double kGlobalBufferArrayEfficiency =
    48.0 * 1024 * 1024 * 8 * 0.027e-6 / kGa100L2DieShotMm2;

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
  // A budget from LLMCompass, converted to this model's density basis (see above).
  void llmcompass_logic(std::string name, double llmcompass_transistors, std::string basis) {
    const double n7_mtr_per_mm2 = process_node("N7").peak_logic_mtr_per_mm2 *
                                  process_node("N7").peak_library_tracks / kGpuLibraryTracks *
                                  kPlacementUtilisation;
    logic(std::move(name), llmcompass_transistors * n7_mtr_per_mm2 / kLlmCompassN7MtrPerMm2,
          std::move(basis));
  }
  void sram(std::string name, double bytes, double cell_factor, std::string basis,
            double array_efficiency = kCacheArrayEfficiency) {
    const double bits = bytes * 8.0;
    const double mm2 = bits * node.sram_bitcell_um2 * cell_factor / array_efficiency * 1e-6;
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
  // An fp32 lane that also runs INT32 carries an integer datapath beside its FMA; its dispatch
  // and operands are the fp32 lane's, so it adds no control below.
  const double vector_tr =
      cores * (c.vector_lanes * kFp32FmaTransistors +
               (c.int32_lanes + c.fp32_int32_lanes) * kInt32LaneTransistors +
               c.fp64_lanes * kFp64FmaTransistors + c.sfu_ops_per_cycle * kSfuTransistors);
  const std::string shared_int32 =
      c.fp32_int32_lanes > 0 ? fmt::format(" ({} also int32)", c.fp32_int32_lanes) : "";
  b.logic("vector_units", vector_tr,
          fmt::format("per core {} fp32{} + {} int32 + {} fp64 lanes + {:g} SFUs", c.vector_lanes,
                      shared_int32, c.int32_lanes, c.fp64_lanes, c.sfu_ops_per_cycle));
  const double lanes = cores * (c.vector_lanes + c.int32_lanes + c.fp64_lanes);
  b.logic(
      "core_control", lanes * kControlTransistorsPerLane,
      fmt::format("{:.0f} lanes x {:.3g} transistors (fitted)", lanes, kControlTransistorsPerLane));
  b.sram("register_files", cores * c.register_file_bytes, kRegisterFileCellFactor,
         fmt::format("{:.0f} KiB per core, multi-ported cells", c.register_file_bytes / 1024));
  b.sram("local_buffers", cores * c.local_buffer_bytes, 1.0,
         fmt::format("{:.0f} KiB per core", c.local_buffer_bytes / 1024));
  if (c.rt_cores > 0) {
    b.logic("rt_cores", cores * c.rt_cores * kRtCoreTransistors,
            fmt::format("{:.0f} RT cores x {:.1f} M transistors (Turing die shot)",
                        cores * c.rt_cores, kRtCoreTransistors / 1e6));
  }
  b.llmcompass_logic("on_chip_network", cores * kNetworkTransistorsPerCore,
                     fmt::format("{:.0f} cores x {:.0f} M transistors (LLMCompass basis)", cores,
                                 kNetworkTransistorsPerCore / 1e6));
  double per_core_mm2 = 0.0;
  for (const auto& part : out.components) per_core_mm2 += part.area_mm2;
  out.core_area_mm2 = per_core_mm2 / cores;

  b.sram("global_buffer", hw.global_buffer_physical_bytes, 1.0,
         fmt::format("{:.0f} MiB on the die, GA100 die-shot density",
                     hw.global_buffer_physical_bytes / (1 << 20)),
         kGlobalBufferArrayEfficiency);
  const MemoryTechnology& mem = memory_technology(hw.memory.type);
  const int mem_phys = hw.memory.phys_on_die;
  b.analog("memory_phys", mem_phys * mem.phy_area_mm2_per_channel,
           fmt::format("{} {} PHYs x {:g} mm^2", mem_phys, memory_type_name(hw.memory.type),
                       mem.phy_area_mm2_per_channel));
  b.llmcompass_logic("memory_controllers", mem_phys * mem.controller_mtransistors_per_channel * 1e6,
                     fmt::format("{} x {:g} M transistors (LLMCompass basis)", mem_phys,
                                 mem.controller_mtransistors_per_channel));
  const InterfacePhy& link = link_phy(hw.node.link_kind);
  const int links = hw.node.links_per_device;
  b.analog("link_phys", links * link.phy_mm2_per_unit,
           fmt::format("{} {} links x {:g} mm^2", links, link.kind, link.phy_mm2_per_unit));
  b.llmcompass_logic("link_controllers", links * link.controller_mtransistors_per_unit * 1e6,
                     fmt::format("{} x {:g} M transistors (LLMCompass basis)", links,
                                 link.controller_mtransistors_per_unit));
  if (!hw.host_bus.empty()) {
    const InterfacePhy& host = host_phy(hw.host_bus);
    b.analog("host_phy", hw.host_bus_lanes * host.phy_mm2_per_unit,
             fmt::format("{} x{} at {:g} mm^2 per lane", host.kind, hw.host_bus_lanes,
                         host.phy_mm2_per_unit));
    b.llmcompass_logic("host_controller",
                       hw.host_bus_lanes * host.controller_mtransistors_per_unit * 1e6,
                       fmt::format("{} lanes x {:g} M transistors (LLMCompass basis)",
                                   hw.host_bus_lanes, host.controller_mtransistors_per_unit));
  }
  for (const auto& part : out.components) {
    out.die_area_mm2 += part.area_mm2;
    out.transistors += part.transistors;
  }
  return out;
}

}  // namespace inferlab
