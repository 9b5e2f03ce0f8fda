#include "cost/calibrated/calibrated_params.hpp"

#include <filesystem>

#include "util/data_dir.hpp"
#include "util/error.hpp"
#include "util/json_file.hpp"
#include "util/json_writer.hpp"

namespace inferlab {

namespace {
// Starting points are typical Hopper figures; the ranges bound what a sane fit produces.
constexpr std::array<CalibParamInfo, kCalibParamCount> kInfo = {{
    {"gemm_compute_efficiency", 0.85, 0.05, 1.5},
    {"gemm_operand_latency_s", 1.5e-6, 1e-8, 1e-4},
    {"gemm_memory_efficiency", 0.9, 0.05, 1.5},
    {"gemm_fixed_s", 3e-6, 0.0, 1e-4},
    {"gemm_wave_fixed_s", 1e-6, 0.0, 1e-4},
    {"splitk_reduce_s", 1.5e-6, 0.0, 1e-4},
    {"gemm_streamk_efficiency", 0.9, 0.05, 1.5},
    {"gemm_streamk_fixed_s", 2e-6, 0.0, 1e-4},
    {"gemm_unaligned_efficiency", 0.9, 0.05, 1.5},
    {"gemm_offset32_efficiency", 0.95, 0.05, 1.5},
    {"gemm_offset64_efficiency", 0.95, 0.05, 1.5},
    {"gemm_clock_drop", 0.1, 0.0, 1.0},
    {"gemm_clock_settle_s", 50e-6, 1e-6, 1e-2},
    {"gemm_overlap_exponent", 4.0, 1.0, 64.0},
    {"gemm_l2_feed_bps", 6e12, 1e11, 1e14},
    {"attn_prefill_efficiency", 0.5, 0.02, 1.5},
    {"attn_prefill_fixed_s", 3e-6, 0.0, 1e-4},
    {"attn_prefill_wave_fixed_s", 1e-6, 0.0, 1e-4},
    {"attn_decode_efficiency", 0.8, 0.02, 1.5},
    {"attn_decode_fixed_s", 3e-6, 0.0, 1e-4},
    {"attn_decode_cta_stream_bps", 30e9, 1e8, 1e12},
    {"norm_efficiency", 0.8, 0.02, 1.5},
    {"norm_fixed_s", 2e-6, 0.0, 1e-4},
    {"norm_round_trip_s", 0.5e-6, 1e-9, 1e-5},
    {"elementwise_efficiency", 0.9, 0.02, 1.5},
    {"elementwise_fixed_s", 1.5e-6, 0.0, 1e-4},
    {"softmax_efficiency", 0.8, 0.02, 1.5},
    {"softmax_fixed_s", 2e-6, 0.0, 1e-4},
    {"softmax_row_stream_bps", 10e9, 1e8, 1e12},
    {"softmax_rows_per_sm", 4.0, 1.0, 64.0},
    {"softmax_warp_col_s", 4e-9, 1e-12, 1e-6},
    {"softmax_warp_rows_per_sm", 16.0, 1.0, 128.0},
    {"softmax_block_efficiency", 0.5, 0.02, 1.5},
    {"isolated_event_s", 3e-6, 0.0, 1e-4},
    {"rope_efficiency", 0.4, 0.02, 1.5},
    {"rope_isolated_launch_s", 2e-6, 0.0, 1e-4},
    {"isolated_flush_fraction", 0.5, 0.0, 2.0},
    {"isolated_launch_s", 1e-6, 0.0, 1e-4},
    {"sustained_compute_slowdown", 1.0, 1.0, 3.0},
    {"strided_efficiency", 0.6, 0.02, 1.5},
    {"strided_fixed_s", 2e-6, 0.0, 1e-4},
}};
}  // namespace

const CalibParamInfo& calib_param_info(CalibParam param) {
  return kInfo[static_cast<int>(param)];
}

CalibratedParams initial_calibrated_params() {
  CalibratedParams p;
  for (int i = 0; i < kCalibParamCount; ++i) p.value[i] = kInfo[i].initial;
  return p;
}

nlohmann::json calibrated_params_to_json(const CalibratedParams& params) {
  nlohmann::json values = nlohmann::json::object();
  for (int i = 0; i < kCalibParamCount; ++i) values[kInfo[i].name] = params.value[i];
  return {{"hardware", params.hardware},
          {"ceilings", params.ceilings},
          {"source", params.source},
          {"params", values},
          {"fit", params.fit_summary}};
}

CalibratedParams calibrated_params_from_json(const nlohmann::json& json,
                                             const std::string& context) {
  CalibratedParams p;
  p.hardware = require_string(json, "hardware", context);
  p.ceilings = require_string(json, "ceilings", context);
  p.source = require_string(json, "source", context);
  if (!json.contains("params") || !json["params"].is_object()) {
    throw InputError(context + ": missing object 'params'");
  }
  for (int i = 0; i < kCalibParamCount; ++i) {
    double v = require_number(json["params"], kInfo[i].name, context + " params");
    if (!(v >= kInfo[i].min && v <= kInfo[i].max)) {
      throw InputError(context + ": " + kInfo[i].name + " = " + std::to_string(v) +
                       " is outside [" + std::to_string(kInfo[i].min) + ", " +
                       std::to_string(kInfo[i].max) + "]");
    }
    p.value[i] = v;
  }
  if (json.contains("fit")) p.fit_summary = json["fit"];
  return p;
}

CalibratedParams load_calibrated_params_file(const std::string& path) {
  return calibrated_params_from_json(read_json_file(path, "calibration"),
                                     "calibration '" + path + "'");
}

void write_calibrated_params_file(const std::string& path, const CalibratedParams& params) {
  write_json_file(path, calibrated_params_to_json(params));
}

bool has_shipped_calibration(const std::string& hardware_name) {
  return std::filesystem::exists(data_dir() / "calibrated" / (hardware_name + ".json"));
}

std::vector<std::string> calibrated_hardware() {
  std::vector<std::string> names;
  auto dir = data_dir() / "calibrated";
  if (!std::filesystem::exists(dir)) return names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace inferlab
