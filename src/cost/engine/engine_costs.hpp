#pragma once
// The inferlab engine's calibration (data/engine_costs/<hardware>.json), fitted by `inferlab fit
// --engine` on the engine's own profiles (fit/fit_engine.hpp) and read by EngineCostModel.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hw/hardware_spec.hpp"
#include "model/op.hpp"

namespace inferlab {

// One (kernel class, path, format) of the engine: each of its kernels takes
//   t0_s + cta_fixed_s x CTAs / SMs + combine_trip_s x the split-K combine's further trips
//        + input_kib_s x the KiB of input each CTA stages (the streaming GEMV)
//        + max(FLOPs / (peak x compute_efficiency), bytes / (bandwidth x memory_efficiency),
//              per-CTA bytes x max(SMs, CTAs) / (bandwidth x cta_efficiency))
// in a stream (a CUDA graph), the ceilings being the ones recorded in the file. The third term,
// for ops that give their grid (Op::grid_ctas), is a CTA streaming its share at a fitted
// fraction of one SM's share of the bandwidth, one CTA per SM at a time; cta_efficiency 0: none.
struct EngineKernelParams {
  double t0_s = 3e-6;
  double compute_efficiency = 0.6;
  double memory_efficiency = 0.9;
  double cta_efficiency = 0.0;
  // OpCost::serial_fraction: fitted for cuBLASLt GEMMs (engine_serial_path), whose time from
  // 128 to 512 rows grows about linearly with the rows instead of staying at the weights'
  // streaming time until compute binds (H200 serving iterations, MEASUREMENTS §24); 0 elsewhere.
  double serial_fraction = 0.0;
  // Fixed time of each wave of CTAs (a CTA's prologue and epilogue: loading its query tile,
  // filling the pipeline, the softmax's last pass and writing out), for ops whose grid is given
  // without a streaming share (engine_cta_waves): the tiled prefill attention, whose achieved
  // rate grows from 10 to 390 TFLOP/s with the work per CTA (H200, MEASUREMENTS §27). 0: none.
  double cta_fixed_s = 0.0;
  // Fixed time of each further dependent trip of the flash decode's split-K combine: the
  // combine folds the splits' partials kDecodeCombineGroup at a time, one trip to memory per
  // group (model/engine_decode_plan.hpp), so past 16 splits a call costs more at the same bytes.
  // Tensor parallelism hits it: 1-2 KV heads a rank at batch 1 leave few CTAs, and the split
  // plan makes up the grid with up to 64 splits (MEASUREMENTS §42). 0: none.
  double combine_trip_s = 0.0;
  // Fixed time per KiB of input rows that each CTA of the streaming GEMV stages in shared memory
  // (with the fused RMSNorm's reduction) before its first multiply-add
  // (engine_staged_input_kib). A projection of k inputs at m rows takes 2 m k bytes at every
  // size, so the cost grows with the width and the rows, not with the weights: on the H200 a
  // 768-wide 174M model's GEMVs take 3 us less than the 8B's fit predicted, and two rows cost
  // 0.8 (768 wide) to 3.6 us (4096 wide) more than one (MEASUREMENTS §47). 0: none.
  double input_kib_s = 0.0;
  int points = 0;     // (profile point, class) samples it was fitted on
  double mape = 0.0;  // on those samples, of the class times less their profile marks
};

// The ceilings efficiencies are fractions of: the hardware's at fit time (measured profile or
// spec sheet), kept in the file so that a later profile does not move the fitted times.
struct EngineCeilings {
  double memory_bandwidth_bps = 0.0;
  double fp32_flops_per_s = 0.0;                     // non-matrix kernels (norms, elementwise)
  std::map<std::string, double> matrix_flops_per_s;  // by dtype name: bf16, fp16, fp8, int8
  int64_t sm_count = 0;                              // 0: the per-CTA term is off
  // The streaming GEMV's multiply-adds (1-2 rows, paths "gemv", "gemv_fused", "gemv_fused_rope")
  // run on the CUDA cores: their FLOPs are priced against fp32_flops_per_s. False in files fitted
  // before 2026-11-28 ("stream_gemv_peak" absent), whose efficiencies are fractions of the matrix
  // peak.
  bool stream_gemv_simt = false;
  std::string source;
};
EngineCeilings engine_ceilings_of(const HardwareSpec& hardware);

struct EngineCosts {
  std::string hardware;
  EngineCeilings ceilings;
  std::map<std::string, EngineKernelParams> kernels;  // by engine_kernel_key
  // Whole steps: what a profile mark (an event after each call) adds to a profiled call; the
  // host's time per eager launch and a constant per eager step; what a kernel saves (< 0) in a
  // CUDA graph against the eager stream the kernels were fitted in, and a constant per graph
  // step.
  double profile_mark_s = 0.0;
  double host_per_kernel_s = 0.0;
  double eager_step_s = 0.0;
  double graph_per_kernel_s = 0.0;
  double graph_step_s = 0.0;
  // What a kernel launched with programmatic dependent launch (Op::programmatic_launch) saves
  // in a graph beyond graph_per_kernel_s: its start overlaps the previous kernel's end, which
  // the profiled passes (eager, an event after each call) cannot show. Fitted on the graph steps
  // that have such kernels; 0 where none were profiled.
  double graph_programmatic_per_kernel_s = 0.0;
  // The tensor cores' clock under power limits: a step's compute-bound tensor-core kernels
  // (cuBLASLt GEMMs, the tiled prefill attention) take their compute term times
  //   1 - matrix_clock_gain x (1 - duty),
  // duty being their share of the step's GPU time; on the H200 the same GEMMs ran ~8% faster
  // between naive attention's memory-bound kernels than back to back. 0: no such term.
  double matrix_clock_gain = 0.0;
  // What one CTA of the flash-decode kernel streams alone, bytes/s: in a batch of unequal
  // contexts the longest sequence's few CTAs each read a whole partition of its KV
  // (model/engine_decode_plan.hpp) while the other SMs idle. Measured from replayed serving
  // iterations (validation/fit_decode_straggler.py); 0: not priced.
  double decode_cta_bps = 0.0;
  // What a forward pass whose result the host waits for adds to its time on the device: the
  // graph's launch, the metadata's upload, the copy back and the wait (generate and the serving
  // loop wait for every pass; a draft model's every step). Measured by `bench --speculative` as
  // host wall minus device time per pass (validation/sync_pass.py); 0: not priced.
  double sync_pass_s = 0.0;
  // What the first pass of a model costs more, a layer, when the GPU's previous pass was another
  // model's (speculation with a draft model alternates the two every round): measured by
  // `bench --speculative draft=...` as its whole rounds against the passes alone, 3-5 us a layer
  // on the H200, on the device's clock (validation/sync_pass.py); 0: not priced.
  double model_switch_per_layer_s = 0.0;
  std::string source;
  nlohmann::json fit_summary = nlohmann::json::object();
};

// "class/path/format", e.g. "gemm_qkv/gemv/int4".
std::string engine_kernel_key(const KernelTag& tag);
std::string engine_kernel_key(const std::string& kernel_class, const std::string& path,
                              const std::string& format);

nlohmann::json engine_costs_to_json(const EngineCosts& costs);
// Missing fields, out-of-range values (efficiencies outside (0, 4], times outside [0, 10 ms])
// and unknown kernel classes are InputErrors naming `context` and the field.
EngineCosts engine_costs_from_json(const nlohmann::json& json, const std::string& context);
EngineCosts load_engine_costs_file(const std::string& path);
void write_engine_costs_file(const std::string& path, const EngineCosts& costs);

// What `--engine-costs` names: "auto" (data/engine_costs/<hardware>.json when shipped, else
// none), "none", or a path. Empty when no engine costs apply.
std::optional<std::string> engine_costs_path(const std::string& choice,
                                             const std::string& hardware_name);

}  // namespace inferlab
