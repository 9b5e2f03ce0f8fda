#include "fit/validation.hpp"

#include <gtest/gtest.h>

#include "cost/roofline.hpp"
#include "fit/reference_data.hpp"
#include "model/op_builders.hpp"
#include "test_support.hpp"
#include "util/error.hpp"

namespace inferlab {
namespace {

// A reference file with one large add (memory bound) and the fastest op (the floor).
nlohmann::json two_ops(double add_measured_s) {
  return {{"ops",
           {{{"op", "add"}, {"tokens", 1}, {"hidden", 8}, {"median_s", 4e-6}},
            {{"op", "add"}, {"tokens", 32768}, {"hidden", 4096}, {"median_s", add_measured_s}}}}};
}

TEST(Validation, OperatorErrorsAgainstTheIsolatedFloor) {
  HardwareSpec hw = load_hardware("h100-sxm", kProfileNone);
  RooflineCostModel cost(hw, testing::unit_factors(1e-6));
  // 805,306,368 bytes at 3.35 TB/s = 240.39 us in-stream work; isolated: + 4 us floor.
  double work_s = 805'306'368.0 / 3.35e12;
  ValidationReport r =
      validate_against_reference(two_ops(work_s + 4e-6), "t", cost, 1e-6, load_host_overhead());
  EXPECT_DOUBLE_EQ(r.isolated_op_floor_s, 4e-6);
  ASSERT_EQ(r.cases.size(), 2u);
  EXPECT_NEAR(r.cases[1].predicted_s, work_s + 4e-6, 1e-12);
  EXPECT_NEAR(r.cases[1].error(), 0.0, 1e-9);
  EXPECT_EQ(r.groups.at("elementwise").cases, 2);
}

TEST(Validation, BoundsPassFailAndRejectUnknownGroups) {
  HardwareSpec hw = load_hardware("h100-sxm", kProfileNone);
  RooflineCostModel cost(hw, testing::unit_factors(1e-6));
  double work_s = 805'306'368.0 / 3.35e12;
  // Measured 10% above the prediction: error -1/11 on that case, 0 on the floor case.
  ValidationReport r = validate_against_reference(two_ops(1.1 * (work_s + 4e-6)), "t", cost, 1e-6,
                                                  load_host_overhead());
  // The floor case's own 48 bytes (14 ps over its 4 us) add an error of ~4e-6 / 2.
  EXPECT_NEAR(r.groups.at("elementwise").mape, (1.0 / 11.0) / 2.0, 1e-5);
  EXPECT_TRUE(groups_over_bounds(r, "elementwise=0.05").empty());
  EXPECT_EQ(groups_over_bounds(r, "elementwise=0.04").size(), 1u);
  EXPECT_THROW(groups_over_bounds(r, "gemm=0.1"), InputError);
  EXPECT_THROW(groups_over_bounds(r, "elementwise"), InputError);
  EXPECT_THROW(groups_over_bounds(r, "elementwise=-1"), InputError);
}

TEST(Validation, StepsUseThePytorchPlanInBothModes) {
  HardwareSpec hw = load_hardware("h100-sxm");
  RooflineCostModel cost(hw, load_delay_factors(hw));
  nlohmann::json ref = {{"steps",
                         {{{"model", "llama-3.2-1b"},
                           {"phase", "decode"},
                           {"batch", 1},
                           {"context", 512},
                           {"graph", {{"median_s", 2e-3}}},
                           {"eager", {{"median_s", 8e-3}}}}}}};
  ValidationReport r = validate_against_reference(ref, "t", cost, 1.5e-6, load_host_overhead());
  ASSERT_EQ(r.cases.size(), 2u);
  EXPECT_EQ(r.cases[0].group, "decode_graph");
  EXPECT_EQ(r.cases[1].group, "decode_eager");
  EXPECT_GT(r.cases[1].predicted_s, r.cases[0].predicted_s);  // host launch cost when eager
  EXPECT_THROW(
      validate_against_reference(nlohmann::json::object(), "t", cost, 1e-6, load_host_overhead()),
      InputError);
}

// A family run's rows of the newer kinds ("ops_pending") and its gpt-fast-layout steps
// ("fused_steps") are read as the kernels PyTorch ran.
TEST(Validation, PendingOpKindsAndFusedStepsAreRead) {
  auto row = [](nlohmann::json r) {
    r["median_s"] = 1e-5;
    return r;
  };
  nlohmann::json ref = {
      {"ops", {row({{"op", "silu_mul_eager"}, {"tokens", 512}, {"intermediate", 8192}})}},
      {"ops_pending",
       {row({{"op", "silu_mul_halves"},
             {"tokens", 512},
             {"intermediate", 8192},
             {"row_stride", 16384}}),
        row({{"op", "linear_bias"}, {"m", 16}, {"n", 3584}, {"k", 3584}}),
        row({{"op", "rope_fused_qkv"},
             {"batch", 1},
             {"tokens", 512},
             {"heads", 32},
             {"kv_heads", 8},
             {"head_dim", 128}}),
        row({{"op", "softmax_fp32"}, {"rows", 32}, {"cols", 2048}}),
        row({{"op", "softmax_bf16_to_fp32"}, {"rows", 32}, {"cols", 2048}})}}};
  auto ops = measured_ops_from_reference(ref, "t");
  ASSERT_EQ(ops.size(), 6u);
  EXPECT_FALSE(ops[0].op.strided_input);
  EXPECT_TRUE(ops[1].op.strided_input);  // same kernels and bytes, strided views
  EXPECT_EQ(ops[1].op.kernels, 2);
  EXPECT_DOUBLE_EQ(ops[1].op.bytes(), ops[0].op.bytes());
  EXPECT_DOUBLE_EQ(
      ops[2].op.bytes(),  // + the bias read
      make_gemm_op("l", 16, 3584, 3584, DType::bf16, DType::bf16, DType::bf16, DType::bf16)
              .bytes() +
          3584.0 * 2.0);
  EXPECT_EQ(ops[3].op.kind, OpKind::rope);
  const double elems = 32.0 * 2048.0;
  EXPECT_DOUBLE_EQ(ops[4].op.bytes(), elems * 8.0);  // fp32 in and out
  EXPECT_EQ(ops[5].op.kernels, 2);                   // a cast to fp32, then the fp32 softmax
  EXPECT_DOUBLE_EQ(ops[5].op.bytes(), elems * (8.0 + 6.0));
  ref["ops_pending"][0]["row_stride"] = 8192;  // not the halves of one row
  EXPECT_THROW(measured_ops_from_reference(ref, "t"), InputError);

  HardwareSpec hw = load_hardware("h100-sxm");
  RooflineCostModel cost(hw, load_delay_factors(hw));
  nlohmann::json step = {{"model", "llama-3.2-1b"},
                         {"phase", "prefill"},
                         {"batch", 1},
                         {"tokens", 512},
                         {"graph", {{"median_s", 3e-3}}}};
  nlohmann::json fused = step;
  fused["layout"] = "fused_qkv_gate_up";
  nlohmann::json steps = {{"steps", {step}}, {"fused_steps", {fused}}};
  ValidationReport r = validate_against_reference(steps, "t", cost, 1.5e-6, load_host_overhead());
  ASSERT_EQ(r.cases.size(), 2u);
  EXPECT_EQ(r.cases[1].group, "prefill_graph");
  EXPECT_NE(r.cases[1].predicted_s, r.cases[0].predicted_s);  // two GEMMs fewer
  steps["fused_steps"][0]["layout"] = "fused_everything";
  EXPECT_THROW(validate_against_reference(steps, "t", cost, 1.5e-6, load_host_overhead()),
               InputError);
}

// A tensor-parallel step says its degree: it is priced on the rank's shard with two all-reduces
// per layer, so at TP 2 a decode of 8B costs less than on one GPU and more than half of it.
// Rows marked "split": "fit" count only under --split fit and all; the rest are held out.
TEST(Validation, TensorParallelStepsArePricedOnTheirShardAndKeepTheirSplit) {
  HardwareSpec hw = load_hardware("h200");
  RooflineCostModel cost(hw, load_delay_factors(hw));
  nlohmann::json one = {{"model", "llama-3-8b"},
                        {"phase", "decode"},
                        {"batch", 1},
                        {"context", 1024},
                        {"graph", {{"median_s", 5e-3}}}};
  nlohmann::json two = one;
  two["tp"] = 2;
  two["split"] = "fit";
  nlohmann::json steps = {{"steps", {one, two}}};
  ValidationReport all =
      validate_against_reference(steps, "t", cost, 1.5e-6, load_host_overhead(), {});
  ASSERT_EQ(all.cases.size(), 2u);
  EXPECT_LT(all.cases[1].predicted_s, all.cases[0].predicted_s);
  EXPECT_GT(all.cases[1].predicted_s, 0.5 * all.cases[0].predicted_s);
  EXPECT_NE(all.cases[1].label.find("tp 2"), std::string::npos);
  EXPECT_TRUE(all.cases[0].held_out);
  EXPECT_FALSE(all.cases[1].held_out);
  const auto count = [&](SplitFilter split) {
    return validate_against_reference(steps, "t", cost, 1.5e-6, load_host_overhead(), {}, split)
        .cases.size();
  };
  EXPECT_EQ(count(SplitFilter::fit), 1u);
  EXPECT_EQ(count(SplitFilter::holdout), 1u);
  steps["steps"][1]["tp"] = 3;  // 32 heads do not split 3 ways
  EXPECT_THROW(validate_against_reference(steps, "t", cost, 1.5e-6, load_host_overhead()),
               InputError);
}

}  // namespace
}  // namespace inferlab
