#pragma once
#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace inferlab {

// The parameters of the calibrated cost model (cost/calibrated/calibrated_cost.hpp), fitted per GPU
// by `inferlab fit --cost calibrated`. Efficiencies are fractions of the GPU's ceilings; *_s are
// fixed times per kernel (or per wave); *_bps are per-SM (per-CTA) streaming rates.
enum class CalibParam : int {
  gemm_compute_efficiency,     // fraction of the per-SM matrix peak a tile's main loop reaches
  gemm_operand_latency_s,      // a tile's operand loads in flight take this long to land
  gemm_memory_efficiency,      // fraction of HBM bandwidth when a GEMM streams its operands
  gemm_fixed_s,                // per GEMM kernel: launch in stream, prologue, epilogue
  gemm_wave_fixed_s,           // per wave of tiles: pipeline fill and drain
  splitk_reduce_s,             // the separate split-K reduction kernel
  gemm_streamk_efficiency,     // stream-K: share of the tile rate kept when work is balanced
  gemm_streamk_fixed_s,        // stream-K: partial-tile fix-up
  gemm_unaligned_efficiency,   // share of the operand streams kept when k rows miss sectors
  gemm_offset32_efficiency,    // ... when rows are 32 (not 64) bytes aligned: start 32 B off
  gemm_offset64_efficiency,    // ... when rows are 64 (not 128) bytes aligned: start 64 B off
  gemm_clock_drop,             // SM-bound GEMM work: slowdown the clock settles at under load
  gemm_clock_settle_s,         // how long a GEMM runs before its clock has dropped by 1 - 1/e
  gemm_overlap_exponent,       // p of (compute^p + HBM^p)^(1/p): how far the two overlap
  gemm_l2_feed_bps,            // operand bytes per second L2 feeds all SMs' tiles together
  attn_prefill_efficiency,     // fraction of the matrix peak in FlashAttention's main loop
  attn_prefill_fixed_s,        // per kernel
  attn_prefill_wave_fixed_s,   // per wave of query tiles
  attn_decode_efficiency,      // fraction of HBM bandwidth streaming the KV cache
  attn_decode_fixed_s,         // per kernel
  attn_decode_cta_stream_bps,  // KV bytes per second one CTA (one sequence x head) streams
  norm_efficiency,             // RMSNorm: fraction of HBM bandwidth
  norm_fixed_s,
  norm_round_trip_s,       // one memory round trip of the CTA that reduces a row
  elementwise_efficiency,  // elementwise, embedding, RoPE, KV writes: fraction of HBM bandwidth
  elementwise_fixed_s,     // per kernel (set from the profile's small kernel in a graph)
  softmax_efficiency,      // softmax and sampling (row reductions)
  softmax_fixed_s,
  softmax_row_stream_bps,
  softmax_rows_per_sm,
  softmax_warp_col_s,        // a warp-per-row softmax row's chain, per column
  softmax_warp_rows_per_sm,  // warp-per-row rows in flight on one SM
  softmax_block_efficiency,  // share of HBM bandwidth the CTA-per-row kernel reaches
  isolated_event_s,          // an op timed alone with CUDA events: the events and launch
  // RoPE in the unfused (PyTorch) form runs PyTorch's generic elementwise kernel on the
  // transposed q/k views: its own share of HBM bandwidth, and its ten kernels issued from
  // Python wait for their launches when the op is timed alone.
  rope_efficiency,
  rope_isolated_launch_s,
  isolated_flush_fraction,     // share of an L2 full of dirty lines written back while the op runs
  isolated_launch_s,           // each further kernel of an op timed alone waits for its launch
  sustained_compute_slowdown,  // GEMM back to back over GEMM alone: the power cap's clock drop
  // Elementwise kernels on strided views (SiLU x mul on the halves of one fused gate/up output):
  // PyTorch's generic, unvectorized kernel at its own share of HBM bandwidth and fixed cost.
  strided_efficiency,
  strided_fixed_s,
  count
};
inline constexpr int kCalibParamCount = static_cast<int>(CalibParam::count);

struct CalibParamInfo {
  const char* name;
  double initial;   // a physically reasonable start for the fit
  double min, max;  // a loaded value outside this range is an input error
};
const CalibParamInfo& calib_param_info(CalibParam param);

struct CalibratedParams {
  std::array<double, kCalibParamCount> value{};
  std::string hardware;  // the GPU they were fitted on
  std::string ceilings;  // where that GPU's ceilings came from when fitting
  std::string source;    // how they were fitted
  nlohmann::json fit_summary = nlohmann::json::object();

  double operator[](CalibParam p) const { return value[static_cast<int>(p)]; }
  double& operator[](CalibParam p) { return value[static_cast<int>(p)]; }
};

CalibratedParams initial_calibrated_params();
nlohmann::json calibrated_params_to_json(const CalibratedParams& params);
// Reads the data/calibrated/<gpu>.json form; out-of-range or missing values are InputErrors.
CalibratedParams calibrated_params_from_json(const nlohmann::json& json,
                                             const std::string& context);
CalibratedParams load_calibrated_params_file(const std::string& path);
// Writes calibrated_params_to_json to `path`; InputError when it cannot.
void write_calibrated_params_file(const std::string& path, const CalibratedParams& params);
// data/calibrated/<name>.json when it exists.
bool has_shipped_calibration(const std::string& hardware_name);
std::vector<std::string> calibrated_hardware();

}  // namespace inferlab
