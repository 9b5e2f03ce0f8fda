// The held-out split never reaches the fit: perturbing the held-out rows of the reference file
// leaves everything the fit sees, and so the fitted parameters, bit-identical.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "fit/fit_inputs.hpp"
#include "fit/fit_run.hpp"
#include "test_support.hpp"
#include "util/json_file.hpp"

namespace inferlab {
namespace {

const std::string kReference = "/../validation/data/torch_reference_h100_2026-11-22b.json";

nlohmann::json reference_with_held_out_times_times(double factor) {
  nlohmann::json doc = read_json_file(testing::test_data_dir() + kReference, "reference");
  for (auto& row : doc["ops"]) {
    if (row.value("split", std::string("fit")) == "holdout") {
      row["median_s"] = row["median_s"].get<double>() * factor;
    }
  }
  return doc;
}

FitInputs inputs_with_held_out_times_times(const HardwareSpec& hw, double factor) {
  const nlohmann::json doc = reference_with_held_out_times_times(factor);
  return gather_fit_inputs(hw, &doc, "reference");
}

bool bit_identical(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

void expect_same_fit_split(const std::vector<MeasuredOp>& a, const std::vector<MeasuredOp>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].label, b[i].label) << i;
    EXPECT_TRUE(bit_identical(a[i].measured_s, b[i].measured_s)) << a[i].label;
    EXPECT_FALSE(a[i].held_out);
    EXPECT_FALSE(b[i].held_out);
    EXPECT_TRUE(bit_identical(a[i].op.flops, b[i].op.flops)) << a[i].label;
    EXPECT_TRUE(bit_identical(a[i].op.bytes(), b[i].op.bytes())) << a[i].label;
  }
}

// Every input of the fit: the fit split's rows (the profile's sweeps included), the isolated
// event floor and the kernel latency the fit starts from.
TEST(HeldOutSplit, PerturbedHeldOutRowsLeaveEveryFitInputBitIdentical) {
  const HardwareSpec hw = load_hardware("h100-sxm", kProfileAuto);
  const FitInputs base = inputs_with_held_out_times_times(hw, 1.0);
  ASSERT_GT(base.held_out, 0);
  ASSERT_GT(base.isolated_floor_s, 0.0);
  for (double factor : {0.5, 2.0}) {
    SCOPED_TRACE(factor);
    const FitInputs perturbed = inputs_with_held_out_times_times(hw, factor);
    // The perturbation reaches the held-out rows...
    ASSERT_EQ(base.measured.size(), perturbed.measured.size());
    int changed = 0;
    for (size_t i = 0; i < base.measured.size(); ++i) {
      if (bit_identical(base.measured[i].measured_s, perturbed.measured[i].measured_s)) continue;
      ++changed;
      EXPECT_TRUE(base.measured[i].held_out) << base.measured[i].label;
    }
    // The reference file's held-out rows, 17 of them softmax and 170 from the family run
    // (linear, linear_bias, SiLU x mul contiguous and on halves, RoPE on fused QKV views); the
    // probe's are not perturbed.
    EXPECT_EQ(changed, 387);
    // ... and nothing the fit sees.
    EXPECT_TRUE(bit_identical(base.isolated_floor_s, perturbed.isolated_floor_s))
        << base.isolated_floor_s << " vs " << perturbed.isolated_floor_s;
    EXPECT_TRUE(bit_identical(base.start.kernel_latency_s, perturbed.start.kernel_latency_s));
    EXPECT_EQ(base.held_out, perturbed.held_out);
    expect_same_fit_split(fit_split(base.measured), fit_split(perturbed.measured));
  }
}

// The floor is the fastest fit-split row even when a held-out row is faster.
TEST(HeldOutSplit, IsolatedFloorComesFromTheFitSplitOnly) {
  const HardwareSpec hw = load_hardware("h100-sxm", kProfileNone);
  nlohmann::json doc = {
      {"ops",
       {{{"op", "add"}, {"tokens", 1}, {"hidden", 8}, {"median_s", 5e-6}},
        {{"op", "add"}, {"tokens", 1}, {"hidden", 16}, {"median_s", 1e-6}, {"split", "holdout"}}}}};
  const FitInputs inputs = gather_fit_inputs(hw, &doc, "t");
  EXPECT_DOUBLE_EQ(inputs.isolated_floor_s, 5e-6);
  EXPECT_EQ(inputs.held_out, 1);
}

// The whole calibrated refit (minutes): set INFERLAB_SLOW_TESTS=1 to run it.
TEST(HeldOutSplit, FullCalibratedRefitIgnoresHeldOutTimes) {
  if (!std::getenv("INFERLAB_SLOW_TESTS")) GTEST_SKIP() << "set INFERLAB_SLOW_TESTS=1";
  const HardwareSpec hw = load_hardware("h100-sxm", kProfileAuto);
  const FitRequest request{kProfileAuto, "reference", ""};
  const CalibratedFit base =
      run_calibrated_fit(hw, inputs_with_held_out_times_times(hw, 1.0), request);
  for (double factor : {0.5, 2.0}) {
    const CalibratedFit perturbed =
        run_calibrated_fit(hw, inputs_with_held_out_times_times(hw, factor), request);
    for (int i = 0; i < kCalibParamCount; ++i) {
      EXPECT_TRUE(bit_identical(base.params.value[i], perturbed.params.value[i]))
          << factor << " " << calib_param_info(static_cast<CalibParam>(i)).name;
    }
  }
}

}  // namespace
}  // namespace inferlab
