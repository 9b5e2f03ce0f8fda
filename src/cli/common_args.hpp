#pragma once
#include <CLI/CLI.hpp>
#include <fstream>
#include <memory>
#include <string>

#include "cost/cost_loader.hpp"
#include "predict/options.hpp"
#include "report/table.hpp"

namespace inferlab::cli {

// Flags shared by predict, step, op and sweep. Parsing only; validation happens where the
// values are used, so the messages are the library's.
struct CommonArgs {
  std::string model = "llama-3.2-1b";
  std::string hardware = "h100-sxm";
  std::string format = "table";
  std::string weights, kv, activations;
  std::string framework = "vllm";
  std::string cuda_graphs = "on";
  std::string flash_attention = "on";
  std::string delay_factor;
  std::string profile = "auto";
  std::string cost = "auto";
  std::string calibration;
  // The inferlab engine's switches (--framework inferlab only; empty: the engine's defaults)
  // and its calibration (auto: data/engine_costs/<hardware>.json when shipped; none; a path).
  std::string gemv, fusion;
  // RoPE in the QKV GEMV's epilogue where the engine can (not an option: `bench` passes its
  // engine's INFERLAB_ENGINE_ROPE_IN_QKV through it, so that --compare prices what ran).
  bool rope_in_qkv = true;
  bool early_cache_reads = true;  // the same for INFERLAB_ENGINE_EARLY_CACHE
  std::string projection_layout;  // --projection-layout (framework pytorch)
  std::string engine_costs = "auto";
  // The calibrated model's sustained clock (CostRequest::sustained): empty, the calibration's
  // own, unless the command registers --sustained (add_sustained_option: default auto).
  std::string sustained;
  int tp = 1;
  double gpu_memory_utilization = 0.9;
};

void add_format_option(CLI::App* app, CommonArgs& args);
// --hardware, --profile, --cost, --calibration, --delay-factor, --framework, --engine-costs
void add_hardware_options(CLI::App* app, CommonArgs& args);
// --sustained auto|none|FILE, default auto (the GPU's shipped sustained clock): predict, step,
// sweep, serve.
void add_sustained_option(CLI::App* app, CommonArgs& args);
// --model and the run options; `swept_elsewhere` leaves out --weights and --tp, which
// `sweep` takes as lists.
void add_model_options(CLI::App* app, CommonArgs& args, bool swept_elsewhere = false);

bool parse_on_off(const std::string& flag, const std::string& value);
// --max-model-len: `requested` tokens (0: the model's context), refused when negative or past
// the model's context (`model_context`; 0 when unknown, then no limit unless requested).
int64_t resolve_max_model_len(int64_t requested, int64_t model_context);
// The step `--phase prefill|decode --batch B --tokens S|--context L` names (step, simulate).
StepShape parse_step_shape(const std::string& phase, int64_t batch, int64_t tokens,
                           int64_t context);
PredictOptions to_predict_options(const CommonArgs& args);
// The options of one step of that shape (its batch, its context, one output token).
PredictOptions to_step_options(const CommonArgs& args, const StepShape& shape);

// --cost, --hardware, --profile, --delay-factor, --calibration, --sustained and (with
// --framework inferlab) --engine-costs as a load request. InputError for --engine-costs with
// another framework.
CostRequest to_cost_request(const CommonArgs& args);
using LoadedHardware = LoadedCost;
LoadedHardware load_cost_model(const CommonArgs& args);

// Prints a JSON object, a table or CSV on stdout.
void print_json(const nlohmann::json& json);

// A file the user named, open for writing; InputError "cannot write <flag> file '<path>'"
// ("cannot write '<path>'" without a flag) when it cannot be created.
std::ofstream open_output(const std::string& path, const std::string& flag = "");

}  // namespace inferlab::cli
