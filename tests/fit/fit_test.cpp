#include <gtest/gtest.h>

#include <algorithm>

#include "cost/calibrated/calibrated_cost.hpp"
#include "cost/roofline.hpp"
#include "fit/fit_calibrated.hpp"
#include "fit/fit_delay_factors.hpp"
#include "model/op_builders.hpp"
#include "test_support.hpp"

namespace inferlab {
namespace {

using P = CalibParam;

// The fit recovers a factor planted in synthetic measurements.
TEST(FitDelayFactors, RecoversPlantedFactor) {
  HardwareSpec hw = load_hardware("h100-sxm", kProfileNone);
  RooflineCostModel unit(hw, testing::unit_factors());
  std::vector<MeasuredOp> measured;
  measured.push_back({make_add_op("tiny", 1, 1, DType::bf16), "floor", 4e-6});
  for (int64_t t : {4096, 8192, 16384, 32768}) {
    Op op = make_add_op("add", t, 4096, DType::bf16);
    measured.push_back({op, "add", 1.25 * unit.price(op).time_s + 4e-6});
  }
  DelayFactorFit fit = fit_delay_factors(hw, testing::unit_factors(), measured);
  EXPECT_NEAR(fit.factors.of(OpClass::elementwise), 1.25, 1e-9);
  EXPECT_EQ(fit.classes[static_cast<int>(OpClass::elementwise)].points, 4);
  EXPECT_NEAR(fit.classes[static_cast<int>(OpClass::elementwise)].mape, 0.0, 1e-9);
  EXPECT_DOUBLE_EQ(fit.factors.of(OpClass::gemm), 1.0);  // no points: unchanged
}

// The fitter recovers parameters from data the model itself generated.
TEST(Calibrated, FitRecoversKnownElementwiseParameters) {
  HardwareSpec hw = load_hardware("h100-sxm", kProfileNone);
  CalibratedParams truth = initial_calibrated_params();
  truth[P::elementwise_efficiency] = 0.7;
  truth[P::elementwise_fixed_s] = 2.5e-6;
  truth[P::isolated_event_s] = 3e-6;
  CalibratedCostModel model(hw, truth, testing::unit_factors());
  std::vector<MeasuredOp> measured;
  for (int64_t tokens : {1, 64, 512, 4096, 32768}) {
    Op op = make_add_op("add", tokens, 4096, DType::bf16);
    measured.push_back({op, "add", model.isolated_time_s(op)});
  }
  Op held = make_add_op("add", 1000, 1000, DType::bf16);
  measured.push_back({held, "held", 1.0, /*held_out=*/true});  // absurd, must be ignored
  // The event overhead is given (floor minus a small kernel in a graph); no profile here, so
  // it keeps its initial value, which the truth shares.
  CalibratedFit fit = fit_calibrated(hw, testing::unit_factors(), measured, 0.0);
  EXPECT_NEAR(fit.params[P::elementwise_efficiency], 0.7, 0.7 * 0.01);
  EXPECT_NEAR(fit.params[P::elementwise_fixed_s], 2.5e-6, 2.5e-8);
  auto elementwise = std::find_if(fit.groups.begin(), fit.groups.end(),
                                  [](const auto& g) { return g.group == CalibGroup::elementwise; });
  ASSERT_NE(elementwise, fit.groups.end());
  EXPECT_EQ(elementwise->points, 5);
  EXPECT_LT(elementwise->mape, 0.005);
}

// RoPE is fitted as a group of its own (its own share of bandwidth and launch wait).
TEST(Calibrated, RopeIsItsOwnFitGroup) {
  Op rope = make_rope_op("rope", 4096, 4096, 1024, 5, DType::bf16);
  EXPECT_EQ(calib_group_of(rope), CalibGroup::rope);
}

// Elementwise ops on strided views have a group (and parameters) of their own.
TEST(Calibrated, StridedElementwiseIsItsOwnFitGroup) {
  Op silu_mul = make_silu_mul_op("silu_mul", 512, 14336, DType::bf16);
  EXPECT_EQ(calib_group_of(silu_mul), CalibGroup::elementwise);
  silu_mul.strided_input = true;
  EXPECT_EQ(calib_group_of(silu_mul), CalibGroup::strided_elementwise);
}

}  // namespace
}  // namespace inferlab
