#pragma once
#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "util/dtype.hpp"

namespace inferlab {

// Main-memory technologies the template (and the area/cost model) know.
enum class MemoryType { hbm2, hbm2e, hbm3, hbm3e, gddr6, lpddr5, ddr5 };
std::string_view memory_type_name(MemoryType type);
MemoryType parse_memory_type(std::string_view name);  // InputError listing the known ones

// How the devices of one node are wired.
enum class Topology { ring, fully_connected, switched };
std::string_view topology_name(Topology topology);
Topology parse_topology(std::string_view name);

// A matrix unit: a rows x cols array of MACs fed one k-slice per cycle (a systolic array, or
// a tensor core seen as one). MACs per cycle per unit for bf16/fp16 is rows x cols; other
// formats scale by their rate (fp8 2x on Hopper, tf32 0.5x, ...).
struct TensorUnitTemplate {
  int per_core = 0;
  int rows = 0, cols = 0;
  std::array<double, kDTypeCount> dtype_rate{};  // 0: not supported
  double macs_per_cycle(DType dtype) const {
    return static_cast<double>(rows) * cols * dtype_rate[static_cast<int>(dtype)];
  }
};

struct CoreTemplate {
  TensorUnitTemplate tensor;
  int vector_lanes = 0;  // fp32 lanes
  int int32_lanes = 0;   // separate integer lanes (area only)
  int fp64_lanes = 0;    // fp64 lanes (area only)
  // Of the fp32 lanes, those that also run INT32 (GA10x/AD10x "FP32/INT32" lanes): their
  // integer datapath is counted, not a second dispatch (area only).
  int fp32_int32_lanes = 0;
  int rt_cores = 0;  // ray-tracing cores per core, a graphics part (area only)
  double vector_flops_per_lane_cycle = 2.0;  // an FMA is 2
  double sfu_ops_per_cycle = 0.0;            // exp, rsqrt, ... per core per cycle
  double register_file_bytes = 0.0;
  double local_buffer_bytes = 0.0;            // shared memory / L1 / local SRAM
  double local_buffer_bytes_per_cycle = 0.0;  // its bandwidth to the units
};

struct MemoryTemplate {
  MemoryType type = MemoryType::hbm3;
  double capacity_bytes = 0.0;
  double bandwidth_bps = 0.0;
  int channels = 0;           // HBM stacks or DRAM channels in use (hw/memory_technology.hpp)
  int phys_on_die = 0;        // memory PHYs built on the die (a spare HBM site counts)
  double latency_s = 500e-9;  // load-to-use latency: bounds what one core can have in flight
};

struct NodeTemplate {
  int devices = 1;                  // devices per node
  double link_bandwidth_bps = 0.0;  // one link, one direction
  int links_per_device = 0;
  double link_latency_s = 0.0;
  Topology topology = Topology::switched;
  std::string link_kind;  // "nvlink4", "infinity_fabric", "ici" ...
};

// Kinds of library kernel whose fixed cost is measured apart (KernelFloors).
enum class KernelKind {
  gemm,
  attention_prefill,
  attention_decode,
  norm,
  elementwise,
  noncontiguous_elementwise,  // PyTorch's generic (unvectorised) kernel on strided views
  count
};
inline constexpr int kKernelKindCount = static_cast<int>(KernelKind::count);
std::string_view kernel_kind_name(KernelKind kind);

// Achieved fractions of the ceilings above. For GPUs that exist they are microbenchmark
// measurements (the probe's peak GEMM rate and stream bandwidths over the datasheet, the
// fixed cost of a kernel); designs that do not exist inherit their base's.
struct EfficiencyTemplate {
  double tensor = 1.0;         // sustained share of the tensor-unit peak in a GEMM main loop
  double memory = 1.0;         // share of main-memory bandwidth a stream reaches
  double global_buffer = 1.0;  // share of global-buffer bandwidth
  // Share of main-memory bandwidth an elementwise kernel on non-contiguous views reaches
  // (PyTorch's generic kernel: one narrow access per element, no vector loads). 0: `memory`.
  double noncontiguous_memory = 0.0;
  // What a kernel streaming its operands from main memory loses to filling and draining the
  // memory pipeline, beyond its floor (measured with operands in the global buffer).
  double memory_ramp_s = 0.0;
  double kernel_in_stream_s = 0.0;  // fixed cost of one kernel back to back (graph)
  double kernel_isolated_s = 0.0;   // fixed cost of one kernel timed alone with events
  // Tensor-unit work sustained for seconds runs at a lower clock on a power-capped part (time
  // back to back over time alone); steps scale their compute-bound share by it. 1: none.
  double sustained_compute_slowdown = 1.0;
  // What one library kernel of each kind costs in a CUDA graph beyond the work the model
  // prices (its prologue, pipeline fill, epilogue and the gap to the next kernel): the
  // in-graph time of the framework's kernel at a tiny shape, like LLMCompass's per-operator
  // overheads. 0: not measured, kernel_in_stream_s stands in.
  std::array<double, kKernelKindCount> kernel_floor_s{};
  double kernel_floor(KernelKind kind) const {
    const double floor = kernel_floor_s[static_cast<int>(kind)];
    return floor > 0.0 ? floor : kernel_in_stream_s;
  }
};

// An accelerator described by its parts (LLMCompass-style): what `--cost tilesim`, `simulate`,
// `area` and `explore` work on. Shipped as data/templates/<name>.json, a variant names a
// `base` and overrides some fields. Every figure keeps its source.
struct HardwareTemplate {
  std::string name, display_name, base;
  std::string process_node;  // "N7", "N5", "N4", "N16"
  double clock_hz = 0.0;
  int core_count = 0;           // cores enabled: what runs the work
  int physical_core_count = 0;  // cores on the die (yield spares included): what costs area
  CoreTemplate core;
  double global_buffer_bytes = 0.0;
  double global_buffer_bandwidth_bps = 0.0;
  double global_buffer_physical_bytes = 0.0;  // on the die, disabled slices included
  MemoryTemplate memory;
  std::string host_bus;  // "pcie4", "pcie5"; empty: none
  int host_bus_lanes = 0;
  NodeTemplate node;
  EfficiencyTemplate efficiency;
  double published_die_area_mm2 = 0.0;  // 0 when none: what the area model is checked against
  nlohmann::json sources = nlohmann::json::object();
  nlohmann::json document;  // the merged JSON the template was read from

  double matrix_peak_flops(DType dtype) const {
    return 2.0 * core_count * core.tensor.per_core * core.tensor.macs_per_cycle(dtype) * clock_hz;
  }
  double vector_peak_flops() const {
    return core_count * core.vector_lanes * core.vector_flops_per_lane_cycle * clock_hz;
  }
  double local_buffer_bandwidth_bps() const { return core.local_buffer_bytes_per_cycle * clock_hz; }
  // What one core pulls from the global buffer when `active_cores` share it.
  double global_buffer_rate_per_core_bps(double active_cores) const {
    return std::min(local_buffer_bandwidth_bps(),
                    global_buffer_bandwidth_bps * efficiency.global_buffer / active_cores);
  }
  // What one core streams from main memory: the bytes it can keep in flight (half its local
  // buffer) per memory latency.
  double memory_rate_per_core_bps() const {
    return std::min(local_buffer_bandwidth_bps(), 0.5 * core.local_buffer_bytes / memory.latency_s);
  }
};

// Parses a template document (after its base was merged in); impossible values are
// InputErrors naming `context`.
HardwareTemplate parse_hardware_template(const nlohmann::json& document,
                                         const std::string& context);
// A shipped name (data/templates/<name>.json, its base chain merged) or a path.
HardwareTemplate load_hardware_template(const std::string& name_or_path);
// Applies "key=value" changes (explore's --vary): cores, clock_ghz, l2_mb, memory
// (a type), memory_gb, memory_tbps, tensor_rows, tensor_cols, local_kb.
HardwareTemplate vary_template(const HardwareTemplate& base, const std::string& key, double value,
                               const std::string& text_value);
std::vector<std::string> known_templates();
// The spec-sheet view of a template (peaks, capacities, links), for what prices steps and
// checks memory fit the same way for templates and real GPUs.
struct HardwareSpec;
HardwareSpec spec_of_template(const HardwareTemplate& t);

}  // namespace inferlab
