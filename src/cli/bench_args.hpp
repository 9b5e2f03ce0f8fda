#pragma once
// `inferlab bench`'s arguments and what its three modes (a timed run, --ablation, --profile)
// share: sizes, the engine options they imply, the hardware and options of the prediction set
// beside a measurement.
#include <cstdint>
#include <string>

#include "cli/common_args.hpp"
#include "cli/engine_args.hpp"
#include "engine/engine_bench.hpp"
#include "predict/engine_switches.hpp"
#include "report/emit.hpp"

namespace inferlab::cli {

struct BenchArgs {
  std::string format = "table";
  std::string model, device = "auto", hardware;
  int64_t batch = 1, input = 512, output = 128, repeats = 5, warmup = 1;
  int64_t max_model_len = 0;  // 0: the model's context
  uint64_t seed = 0;
  bool compare = false, no_kernels = false, ablation = false, profile = false;
  std::string cuda_graphs = "on";
  std::string profile_grid = "standard";  // --profile's grid: standard, long or large
  std::string speculative;  // ngram,k=K or draft=MODEL,k=K: time speculation's steps instead
  double gpu_memory_utilization = 0.90;
  EngineSwitchArgs switches;
};

void check_bench_sizes(const BenchArgs& a);
// --input + --output within --max-model-len (default: the model's context), checked before any
// weight is read.
void check_bench_context(const BenchArgs& a);
// The hardware the prediction prices: --hardware, else the GPU this runs on.
std::string hardware_for_compare(const BenchArgs& a, const std::string& device_name);
// predict's --model for the bench's model (a checkpoint's config.json, or the shipped name).
std::string predict_model_name(const std::string& model);
// The engine options and the bench sizes of a --batch × (--input + --output) run.
EngineOptions batch_engine_options(const BenchArgs& a);
engine::BenchOptions bench_options(const BenchArgs& a, bool profile_kernels);
// predict's options for the engine run with `options`: --framework inferlab with the same
// graphs, attention and number formats.
CommonArgs predict_args_for(const BenchArgs& a, const EngineOptions& options,
                            const std::string& hardware);
// The switches a run with `options` has, as engine profiles record them.
EngineSwitches engine_switches_of(const EngineOptions& options);

// The modes: bench_ablation.cpp and bench_profile.cpp.
void run_ablation(const BenchArgs& a, OutputFormat format);
void run_profile(const BenchArgs& a, OutputFormat format);

}  // namespace inferlab::cli
