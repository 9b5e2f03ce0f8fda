// Accuracy guard (a ratchet, docs/MEASUREMENTS.md §12 and §19): `predict --framework inferlab`
// against the engine's own committed measurements (H100, 2026-11-23, CUDA graphs and the GEMV
// kernel: validation/data/engine_speed_graphs_h100_2026-11-23c.json), so that a change of the
// model, or a new measurement of changed kernels that the model does not follow, fails here.
// Each row is predicted as `bench --compare` predicts it: prefill rows as a request of `tokens`
// prompt tokens and one output token (prefill_ms), decode rows as batch × 1024 prompt tokens and
// 9 outputs (tpot_ms, the mean of the 8 decode steps the engine timed).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/predict_run.hpp"
#include "test_support.hpp"

namespace inferlab {
namespace {

double mean(const std::vector<double>& v) {
  double total = 0;
  for (double x : v) total += x;
  return v.empty() ? 0 : total / static_cast<double>(v.size());
}

TEST(AccuracyGuard, EngineStepsH100) {
  const auto path = std::filesystem::path(testing::test_data_dir()).parent_path() / "validation" /
                    "data" / "engine_speed_graphs_h100_2026-11-23c.json";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  const auto measured = nlohmann::json::parse(in);
  std::vector<double> prefill_errors, decode_errors;
  for (const auto& row : measured["rows"]) {
    cli::CommonArgs common;
    common.model = row["model"].get<std::string>();
    common.hardware = "h100-sxm";
    common.framework = "inferlab";
    // Today's pricing (PyTorch-fitted kernel costs), whatever engine costs are shipped: the
    // engine's own calibration is guarded by AccuracyGuard.EngineProfile* (tests/CMakeLists.txt).
    common.engine_costs = "none";
    common.gemv = "on";
    common.fusion = "off";
    common.cuda_graphs = "on";
    const auto batch = row["batch"].get<int64_t>();
    const auto& spread = row["engine"]["spread"];
    if (row["phase"] == "prefill") {
      const auto tokens = row["tokens"].get<int64_t>();
      const double predicted_ms =
          cli::run_prediction(common, batch, tokens, 1).prediction.prefill_s * 1e3;
      const double measured_ms = spread["prefill"]["median_ms"].get<double>();
      prefill_errors.push_back(std::abs(predicted_ms / measured_ms - 1));
    } else {
      const double predicted_ms =
          cli::run_prediction(common, batch, 1024, 9).prediction.tpot_s * 1e3;
      const double measured_ms = spread["decode_step"]["median_ms"].get<double>();
      decode_errors.push_back(std::abs(predicted_ms / measured_ms - 1));
    }
  }
  ASSERT_EQ(prefill_errors.size(), 6u);
  ASSERT_EQ(decode_errors.size(), 6u);
  // Bounds: the MAPE of the model at this commit × 1.10, rounded up to half a point.
  EXPECT_LE(mean(prefill_errors), 0.14) << "prefill MAPE";
  EXPECT_LE(mean(decode_errors), 0.065) << "decode MAPE";
  std::cout << "engine prefill MAPE " << 100 * mean(prefill_errors) << "%, decode MAPE "
            << 100 * mean(decode_errors) << "%\n";
}

}  // namespace
}  // namespace inferlab
