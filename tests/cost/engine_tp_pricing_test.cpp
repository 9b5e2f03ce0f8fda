// The engine calibration's terms for the shapes tensor parallelism gives a rank (MEASUREMENTS
// §42): the flash decode's split-K combine trips, the streaming GEMV's arithmetic on the CUDA
// cores, and how a calibration file says which it was fitted with. Values worked out by hand.
#include <gtest/gtest.h>

#include "cost/engine/engine_cost.hpp"
#include "fit/engine_kernel_fit.hpp"
#include "model/engine_decode_plan.hpp"
#include "util/error.hpp"

namespace inferlab {
namespace {

EngineCeilings h200_like() {
  EngineCeilings c;
  c.memory_bandwidth_bps = 4e12;
  c.fp32_flops_per_s = 6e13;
  c.matrix_flops_per_s["bf16"] = 8e14;
  c.sm_count = 132;
  return c;
}

// One layer's flash decode of Llama 3 8B's heads on a rank of `tp`: 32 / tp query heads,
// 8 / tp KV heads of 128, a bf16 cache.
Op flash_decode(int64_t batch, int64_t context, int64_t tp) {
  Op op;
  op.kind = OpKind::attention;
  op.attention = {batch, 32 / tp, 8 / tp, 128, 1, context, false};
  op.kv_bytes = 2.0 * static_cast<double>(batch * context * (8 / tp)) * 128.0 * 2.0;
  op.activation_bytes = 2.0 * static_cast<double>(batch * (32 / tp)) * 128.0 * 2.0;
  op.flops = 4.0 * static_cast<double>(batch * (32 / tp) * 128 * context);
  op.tag = {"attention", "flash_decode", "bf16", 1};
  return op;
}

TEST(DecodeCombine, OneTripPerSixteenSplits) {
  EXPECT_EQ(decode_combine_trips(1), 0);  // one split: no combine kernel
  EXPECT_EQ(decode_combine_trips(2), 1);
  EXPECT_EQ(decode_combine_trips(16), 1);
  EXPECT_EQ(decode_combine_trips(17), 2);
  EXPECT_EQ(decode_combine_trips(33), 3);
  EXPECT_EQ(decode_combine_trips(64), 4);
}

TEST(DecodeCombine, ExtraTripsFollowTheSplitPlan) {
  const EngineCeilings c = h200_like();
  // One GPU, batch 1: 8 CTAs; context 1024 (bucket 1024, at most 16 splits): 16 splits, one
  // trip. Context 4096: ceil(264 / 8) = 33 splits of 125 positions, 3 trips, 2 past the first.
  EXPECT_EQ(engine_combine_extra_trips(flash_decode(1, 1024, 1), c), 0);
  EXPECT_EQ(engine_combine_extra_trips(flash_decode(1, 4096, 1), c), 2);
  // Context 4200 (bucket 8192): 33 splits of 249 positions, of which ceil(4200 / 249) = 17 hold
  // any: 2 trips over them, 1 past the first (the empty splits' trip is not charged).
  EXPECT_EQ(engine_combine_extra_trips(flash_decode(1, 4200, 1), c), 1);
  // Context 1100 (bucket 2048): 32 splits of 64, 18 holding positions: still 2 trips.
  EXPECT_EQ(engine_combine_extra_trips(flash_decode(1, 1100, 1), c), 1);
  // Batch 2, context 1025 (bucket 2048): 16 CTAs, ceil(264 / 16) = 17 splits of 121, of which 9
  // hold positions: one trip (17 splits would make two).
  EXPECT_EQ(engine_combine_extra_trips(flash_decode(2, 1025, 1), c), 0);
  // TP 4, batch 1: 2 KV heads a rank, 2 CTAs; at 4096 the plan's limit, 64 splits: 4 trips.
  EXPECT_EQ(engine_combine_extra_trips(flash_decode(1, 4096, 4), c), 3);
  // TP 4, batch 64: 128 CTAs, ceil(264 / 128) = 3 splits: one trip.
  EXPECT_EQ(engine_combine_extra_trips(flash_decode(64, 1024, 4), c), 0);
  // Not a flash decode, or no SM count: none.
  Op prefill = flash_decode(1, 4096, 4);
  prefill.tag.path = "flash_prefill";
  EXPECT_EQ(engine_combine_extra_trips(prefill, c), 0);
  EngineCeilings no_sms = c;
  no_sms.sm_count = 0;
  EXPECT_EQ(engine_combine_extra_trips(flash_decode(1, 4096, 4), no_sms), 0);
}

// The flash decode with early cache reads runs the same combine, and is priced by flash_decode's
// calibration where it has none of its own.
TEST(DecodeCombine, TheDecodeWithEarlyCacheReadsMakesTheSameTrips) {
  const EngineCeilings c = h200_like();
  Op early = flash_decode(1, 4096, 4);
  early.tag.path = "flash_decode_early";
  EXPECT_EQ(engine_combine_extra_trips(early, c), 3);
  const std::vector<std::string> keys = engine_key_candidates(early.tag);
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0], "attention/flash_decode_early/bf16");
  EXPECT_EQ(keys[1], "attention/flash_decode/bf16");
}

TEST(DecodeCombine, EachFurtherTripAddsItsFixedTime) {
  // TP 4, batch 1, context 4096: 4,194,304 bytes of keys and values + 4,096 of query and output
  // at 4 TB/s x 0.9 = 1.166222 us; t0 8 us; 3 further trips of 1.25 us: 12.916222 us.
  const EngineCeilings c = h200_like();
  EngineKernelParams p{8e-6, 0.6, 0.9};
  p.combine_trip_s = 1.25e-6;
  const OpCost cost = engine_op_cost(flash_decode(1, 4096, 4), p, c);
  EXPECT_NEAR(cost.memory_s, 4198400.0 / 3.6e12, 1e-15);
  EXPECT_NEAR(cost.latency_s, 8e-6 + 3 * 1.25e-6, 1e-15);
  EXPECT_NEAR(cost.time_s, 12.916222e-6, 1e-12);
}

// Samples of 32 launches at 0-3 further trips a launch, over several sizes, timed by `truth`.
std::vector<EngineKernelSample> samples_with_trips(const EngineKernelParams& truth) {
  std::vector<EngineKernelSample> samples;
  for (double trips : {0.0, 1.0, 2.0, 3.0}) {
    for (double mb : {1.0, 4.0, 16.0}) {
      EngineWorkTerm term{32.0, 1e-9, 32.0 * mb * 1e6 / 4e12};
      term.combine_trips = 32.0 * trips;
      EngineKernelSample sample{0.0, {term}};
      sample.target_s = engine_sample_time_s(sample, truth);
      samples.push_back(sample);
    }
  }
  return samples;
}

// Two samples, both one further trip a launch, 9 us fixed and 3.6 TB/s a launch.
std::vector<EngineKernelSample> samples_of_one_trip() {
  std::vector<EngineKernelSample> samples;
  for (double mb : {2.0, 8.0}) {
    EngineWorkTerm term{32.0, 1e-9, 32.0 * mb * 1e6 / 4e12};
    term.combine_trips = 32.0;
    samples.push_back({32.0 * (9e-6 + mb * 1e6 / 3.6e12), {term}});
  }
  return samples;
}

TEST(DecodeCombine, TheFitRecoversAPlantedTripCost) {
  // Truth t0 5 us, e_memory 0.8, 2 us a further trip; samples of 32 launches at 0-3 further
  // trips a launch, over several sizes.
  EngineKernelParams truth{5e-6, 0.6, 0.8};
  truth.combine_trip_s = 2e-6;
  const std::vector<EngineKernelSample> samples = samples_with_trips(truth);
  const EngineKernelParams p = fit_engine_kernel(samples, {}, EngineBound::memory);
  EXPECT_NEAR(p.combine_trip_s, 2e-6, 0.02e-6);
  EXPECT_NEAR(p.t0_s, 5e-6, 0.05e-6);
  EXPECT_NEAR(p.memory_efficiency, 0.8, 0.008);
  EXPECT_EQ(p.cta_fixed_s, 0.0);
}

TEST(DecodeCombine, AMeasuredTripCostIsKeptAndTheRestFitted) {
  // Truth t0 5 us, e_memory 0.8, 2 us a further trip, as above; the trip given as measured at
  // 0.7 us: kept, and t0 takes up what the trips no longer explain (a least-squares compromise,
  // so only its direction is asserted); given at the truth, the truth comes back.
  EngineKernelParams truth{5e-6, 0.6, 0.8};
  truth.combine_trip_s = 2e-6;
  const std::vector<EngineKernelSample> samples = samples_with_trips(truth);
  EngineKernelPrior measured;
  measured.combine_trip_s = 0.7e-6;
  const EngineKernelParams low = fit_engine_kernel(samples, measured, EngineBound::memory);
  EXPECT_EQ(low.combine_trip_s, 0.7e-6);
  EXPECT_GT(low.t0_s, 5e-6);
  measured.combine_trip_s = 2e-6;
  const EngineKernelParams exact = fit_engine_kernel(samples, measured, EngineBound::memory);
  EXPECT_EQ(exact.combine_trip_s, 2e-6);
  EXPECT_NEAR(exact.t0_s, 5e-6, 0.05e-6);
  EXPECT_NEAR(exact.memory_efficiency, 0.8, 0.008);
}

TEST(DecodeCombine, AMeasuredTripCostPricesTripsThatDoNotVary) {
  // Every sample one further trip a launch: not fittable, but a measured cost still applies,
  // and t0 is what is left: 9 us less the 1 us trip.
  const std::vector<EngineKernelSample> samples = samples_of_one_trip();
  EngineKernelPrior measured;
  measured.combine_trip_s = 1e-6;
  const EngineKernelParams p = fit_engine_kernel(samples, measured, EngineBound::memory);
  EXPECT_EQ(p.combine_trip_s, 1e-6);
  EXPECT_NEAR(p.t0_s, 8e-6, 0.05e-6);
  EXPECT_NEAR(p.memory_efficiency, 0.9, 0.009);
}

TEST(DecodeCombine, NoTripCostWhereEverySampleHasTheSameTrips) {
  // Two samples, both one further trip a launch: a trip's cost cannot be told from t0.
  const std::vector<EngineKernelSample> samples = samples_of_one_trip();
  const EngineKernelParams p = fit_engine_kernel(samples, {}, EngineBound::memory);
  EXPECT_EQ(p.combine_trip_s, 0.0);
  EXPECT_LT(p.mape, 0.01);
}

TEST(StreamGemv, MultiplyAddsArePricedOnTheCudaCores) {
  EngineCeilings c = h200_like();
  Op gemv;
  gemv.kind = OpKind::gemm;
  gemv.tag = {"gemm_qkv", "gemv_fused", "bf16", 1};
  c.stream_gemv_simt = true;
  EXPECT_EQ(engine_op_peak(gemv, c), 6e13);
  gemv.tag.path = "gemv";
  EXPECT_EQ(engine_op_peak(gemv, c), 6e13);
  // The tensor-core GEMV and cuBLASLt keep the matrix peak.
  gemv.tag.path = "gemv_mma_fused";
  EXPECT_EQ(engine_op_peak(gemv, c), 8e14);
  gemv.tag.path = "gemm";
  EXPECT_EQ(engine_op_peak(gemv, c), 8e14);
  // A file fitted before (no "stream_gemv_peak"): the matrix peak, as it was fitted.
  gemv.tag.path = "gemv_fused";
  c.stream_gemv_simt = false;
  EXPECT_EQ(engine_op_peak(gemv, c), 8e14);
}

nlohmann::json minimal_costs_json() {
  EngineCosts costs;
  costs.hardware = "h200";
  costs.source = "test";
  costs.ceilings = h200_like();
  costs.ceilings.stream_gemv_simt = true;
  EngineKernelParams p{8e-6, 0.6, 0.9};
  p.combine_trip_s = 1.25e-6;
  costs.kernels[engine_kernel_key("attention", "flash_decode", "bf16")] = p;
  return engine_costs_to_json(costs);
}

TEST(StreamGemv, TheFileSaysWhichPeakItWasFittedAgainst) {
  nlohmann::json json = minimal_costs_json();
  EXPECT_EQ(json["ceilings"]["stream_gemv_peak"], "fp32");
  const EngineCosts back = engine_costs_from_json(json, "test");
  EXPECT_TRUE(back.ceilings.stream_gemv_simt);
  EXPECT_EQ(back.kernels.at("attention/flash_decode/bf16").combine_trip_s, 1.25e-6);
  // Files written before 2026-11-28 have neither field: the matrix peak, no trip cost.
  json["ceilings"].erase("stream_gemv_peak");
  json["kernels"]["attention/flash_decode/bf16"].erase("combine_trip_s");
  const EngineCosts old = engine_costs_from_json(json, "test");
  EXPECT_FALSE(old.ceilings.stream_gemv_simt);
  EXPECT_EQ(old.kernels.at("attention/flash_decode/bf16").combine_trip_s, 0.0);
  json["ceilings"]["stream_gemv_peak"] = "tensor";
  EXPECT_THROW(engine_costs_from_json(json, "test"), InputError);
}

}  // namespace
}  // namespace inferlab
