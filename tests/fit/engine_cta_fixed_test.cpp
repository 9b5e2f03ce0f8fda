// The per-CTA fixed cost of the engine's calibration (EngineKernelParams::cta_fixed_s): priced
// per wave of CTAs, fitted beside t0 from planted values, and carried by the calibration file.
#include <gtest/gtest.h>

#include <cmath>

#include "cost/engine/engine_cost.hpp"
#include "fit/engine_kernel_fit.hpp"
#include "util/error.hpp"

namespace inferlab {
namespace {

EngineCeilings h200_like() {
  EngineCeilings c;
  c.memory_bandwidth_bps = 4.6e12;
  c.fp32_flops_per_s = 6e13;
  c.matrix_flops_per_s["bf16"] = 8e14;
  c.sm_count = 132;
  return c;
}

TEST(EngineCost, EachWaveOfCtasAddsItsFixedCost) {
  // The tiled prefill of 2048 tokens, one sequence, 32 heads: 32 x 16 = 512 CTAs, 512 / 132 =
  // 3.879 waves; at t0 10 us and 9 us a wave the fixed part is 10 + 34.91 us.
  Op op;
  op.kind = OpKind::attention;
  op.flops = 1e12;
  op.grid_ctas = 512;
  const EngineCeilings ceilings = h200_like();
  EXPECT_NEAR(engine_cta_waves(op, ceilings), 512.0 / 132.0, 1e-12);
  EngineKernelParams p{10e-6, 0.5, 0.9};
  p.cta_fixed_s = 9e-6;
  const OpCost cost = engine_op_cost(op, p, ceilings);
  EXPECT_NEAR(cost.latency_s, 10e-6 + 9e-6 * 512.0 / 132.0, 1e-15);
  EXPECT_NEAR(cost.compute_s, 1e12 / (8e14 * 0.5), 1e-15);
  // A grid with a streaming share is priced by the CTA stream, not per wave.
  op.bytes_per_cta = 1e6;
  EXPECT_EQ(engine_cta_waves(op, ceilings), 0.0);
  // No SM count: no waves.
  op.bytes_per_cta = 0.0;
  EngineCeilings no_sms = ceilings;
  no_sms.sm_count = 0;
  EXPECT_EQ(engine_cta_waves(op, no_sms), 0.0);
}

TEST(EngineKernelFit, RecoversAPlantedPerCtaFixedCost) {
  // Compute-bound samples of prefill attention, one launch per layer (32), CTAs per layer from
  // 4 to 4096 and work per CTA from small to large: truth t0 10 us, 9 us a wave, e_compute
  // 0.45. A fixed cost per wave and one per launch are told apart by the spread of CTAs per
  // launch.
  EngineKernelParams truth{10e-6, 0.45, 0.9};
  truth.cta_fixed_s = 9e-6;
  std::vector<EngineKernelSample> samples;
  for (double ctas : {4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0}) {
    for (double flops_per_cta : {2e7, 2e8, 2e9}) {
      const EngineWorkTerm term{32.0, 32.0 * ctas * flops_per_cta / 8e14, 1e-9, 0.0,
                                32.0 * ctas / 132.0};
      EngineKernelSample sample{0.0, {term}};
      sample.target_s = engine_sample_time_s(sample, truth);
      samples.push_back(sample);
    }
  }
  const EngineKernelParams p = fit_engine_kernel(samples, {}, EngineBound::compute);
  EXPECT_NEAR(p.cta_fixed_s, 9e-6, 0.2e-6);
  EXPECT_NEAR(p.t0_s, 10e-6, 0.5e-6);
  EXPECT_NEAR(p.compute_efficiency, 0.45, 0.005);
  EXPECT_LT(p.mape, 2e-3);
  // Samples without waves fit no per-wave cost.
  EngineKernelSample plain{30e-6, {{1.0, 0.0, 20e-6}}};
  EXPECT_EQ(fit_engine_kernel({plain}, {}, EngineBound::memory).cta_fixed_s, 0.0);
}

TEST(EngineCosts, PerWaveCostAndDecodeRateReadBack) {
  EngineCosts c;
  c.hardware = "h200";
  c.source = "test";
  c.ceilings = h200_like();
  c.decode_cta_bps = 55e9;
  EngineKernelParams p{10e-6, 0.45, 0.9};
  p.cta_fixed_s = 9e-6;
  c.kernels["attention/flash_prefill/bf16"] = p;
  const EngineCosts back = engine_costs_from_json(engine_costs_to_json(c), "test");
  EXPECT_DOUBLE_EQ(back.decode_cta_bps, 55e9);
  EXPECT_DOUBLE_EQ(back.kernels.at("attention/flash_prefill/bf16").cta_fixed_s, 9e-6);
  // Out of range: an InputError naming the field.
  nlohmann::json bad = engine_costs_to_json(c);
  bad["steps"]["decode_cta_bps"] = -1.0;
  EXPECT_THROW(engine_costs_from_json(bad, "test"), InputError);
  bad = engine_costs_to_json(c);
  bad["kernels"]["attention/flash_prefill/bf16"]["cta_fixed_s"] = 1.0;
  EXPECT_THROW(engine_costs_from_json(bad, "test"), InputError);
}

}  // namespace
}  // namespace inferlab
