// The streaming GEMV's staged input (EngineKernelParams::input_kib_s): each CTA stages the m x k
// input in shared memory before streaming its weight rows, a cost that grows with the width and
// the rows, not with the weights. Priced per launch, fitted beside t0 from planted values, and
// carried by the calibration file.
#include <gtest/gtest.h>

#include "cost/engine/engine_cost.hpp"
#include "fit/engine_kernel_fit.hpp"
#include "util/error.hpp"

namespace inferlab {
namespace {

Op gemv(const char* path, const char* format, int64_t m, int64_t n, int64_t k) {
  Op op;
  op.kind = OpKind::gemm;
  op.gemm = {m, n, k};
  op.tag.path = path;
  op.tag.format = format;
  op.weight_bytes = 2.0 * static_cast<double>(n * k);
  return op;
}

TEST(EngineCost, TheStreamingGemvPaysForTheInputItStages) {
  // Two rows of 4096 bf16 inputs: 16 KiB; int4 stages two byte planes and 8 bytes per 32
  // elements (9 KiB a row of 4096); W8A8 stages int8 codes: 8 KiB.
  EXPECT_DOUBLE_EQ(engine_staged_input_kib(gemv("gemv_fused", "bf16", 2, 6144, 4096)), 16.0);
  EXPECT_DOUBLE_EQ(engine_staged_input_kib(gemv("gemv", "int4", 1, 6144, 4096)), 9.0);
  EXPECT_DOUBLE_EQ(engine_staged_input_kib(gemv("gemv_fused", "w8a8", 2, 6144, 4096)), 8.0);
  // cuBLASLt's GEMMs and the tensor-core GEMV do not: no term.
  EXPECT_EQ(engine_staged_input_kib(gemv("gemm", "bf16", 64, 6144, 4096)), 0.0);
  EXPECT_EQ(engine_staged_input_kib(gemv("gemv_mma_fused", "int4", 8, 6144, 4096)), 0.0);

  // t0 5 us, 0.25 us a KiB, 50 MB at 4.6 TB/s x 0.9: the latency is 5 + 0.25 x 16 = 9 us.
  EngineCeilings ceilings;
  ceilings.memory_bandwidth_bps = 4.6e12;
  ceilings.fp32_flops_per_s = 6e13;
  ceilings.matrix_flops_per_s["bf16"] = 8e14;
  EngineKernelParams p{5e-6, 0.5, 0.9};
  p.input_kib_s = 0.25e-6;
  const Op op = gemv("gemv_fused", "bf16", 2, 6144, 4096);
  const OpCost cost = engine_op_cost(op, p, ceilings);
  EXPECT_NEAR(cost.latency_s, 9e-6, 1e-15);
  EXPECT_NEAR(cost.memory_s, op.weight_bytes / (4.6e12 * 0.9), 1e-15);
}

TEST(EngineKernelFit, RecoversAPlantedCostPerStagedKib) {
  // Memory-bound GEMVs of widths 768 to 14336 at one and two rows, weights 1-120 MB: truth t0
  // 3 us, 0.2 us a staged KiB, e_memory 0.95. Launches of one width but different weights tell
  // t0 from the bandwidth, widths and rows tell the staged input from t0.
  EngineKernelParams truth{3e-6, 0.6, 0.95};
  truth.input_kib_s = 0.2e-6;
  std::vector<EngineKernelSample> samples;
  for (double width : {768.0, 2048.0, 4096.0, 14336.0}) {
    for (double rows : {1.0, 2.0}) {
      for (double weight_mb : {1.0, 12.0, 120.0}) {
        EngineWorkTerm term{12.0, 1e-9, 12.0 * weight_mb * 1e6 / 4.6e12};
        term.staged_input_kib = 12.0 * rows * width * 2.0 / 1024.0;
        EngineKernelSample sample{0.0, {term}};
        sample.target_s = engine_sample_time_s(sample, truth);
        samples.push_back(sample);
      }
    }
  }
  const EngineKernelParams p = fit_engine_kernel(samples, {}, EngineBound::memory);
  EXPECT_NEAR(p.input_kib_s, 0.2e-6, 0.01e-6);
  EXPECT_NEAR(p.t0_s, 3e-6, 0.1e-6);
  EXPECT_NEAR(p.memory_efficiency, 0.95, 0.005);
  EXPECT_LT(p.mape, 2e-3);
  // One width at one and two rows: the rows alone could be the arithmetic's share as well, so the
  // staged input is not fitted (t0 takes it).
  std::vector<EngineKernelSample> one_width(samples.begin(), samples.begin() + 6);
  ASSERT_EQ(one_width[0].terms[0].staged_input_kib * 2.0, one_width[5].terms[0].staged_input_kib);
  EXPECT_EQ(fit_engine_kernel(one_width, {}, EngineBound::memory).input_kib_s, 0.0);
}

TEST(EngineCosts, StagedInputAndSyncPassReadBack) {
  EngineCosts c;
  c.hardware = "h200";
  c.source = "test";
  c.ceilings.memory_bandwidth_bps = 4.6e12;
  c.ceilings.fp32_flops_per_s = 6e13;
  c.ceilings.matrix_flops_per_s["bf16"] = 8e14;
  c.sync_pass_s = 14e-6;
  c.model_switch_per_layer_s = 4.7e-6;
  EngineKernelParams p{3e-6, 0.6, 0.95};
  p.input_kib_s = 0.2e-6;
  c.kernels["gemm_qkv/gemv_fused/bf16"] = p;
  const EngineCosts back = engine_costs_from_json(engine_costs_to_json(c), "test");
  EXPECT_DOUBLE_EQ(back.sync_pass_s, 14e-6);
  EXPECT_DOUBLE_EQ(back.model_switch_per_layer_s, 4.7e-6);
  EXPECT_DOUBLE_EQ(back.kernels.at("gemm_qkv/gemv_fused/bf16").input_kib_s, 0.2e-6);
  // Files written before either term read as none.
  nlohmann::json old = engine_costs_to_json(c);
  old["steps"].erase("sync_pass_s");
  old["steps"].erase("model_switch_per_layer_s");
  old["kernels"]["gemm_qkv/gemv_fused/bf16"].erase("input_kib_s");
  const EngineCosts before = engine_costs_from_json(old, "test");
  EXPECT_EQ(before.sync_pass_s, 0.0);
  EXPECT_EQ(before.model_switch_per_layer_s, 0.0);
  EXPECT_EQ(before.kernels.at("gemm_qkv/gemv_fused/bf16").input_kib_s, 0.0);
  // Out of range: an InputError.
  nlohmann::json bad = engine_costs_to_json(c);
  bad["steps"]["sync_pass_s"] = 0.5;
  EXPECT_THROW(engine_costs_from_json(bad, "test"), InputError);
  bad = engine_costs_to_json(c);
  bad["kernels"]["gemm_qkv/gemv_fused/bf16"]["input_kib_s"] = -1e-6;
  EXPECT_THROW(engine_costs_from_json(bad, "test"), InputError);
}

}  // namespace
}  // namespace inferlab
