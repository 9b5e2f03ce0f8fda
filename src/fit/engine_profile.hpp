#pragma once
// The inferlab engine's own measurements (`inferlab bench --profile` output, one file per model,
// hardware and switch combination; docs/ENGINE_PREDICTION.md has the format): whole prefill and
// decode steps, and the GPU time of each kernel class in a profiled pass of the same shape.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/op.hpp"
#include "predict/engine_switches.hpp"

namespace inferlab {

// One kernel class of a profiled pass: everything launched for that logical op, timed by the
// events after each call ("launches" counts the calls).
struct EngineClassMeasure {
  std::string kernel;  // one of kEngineKernelClasses
  double seconds = 0.0;
  double bytes = 0.0, flops = 0.0;  // as the engine counts them (reported beside ours)
  int64_t launches = 0;
};

struct EngineProfilePoint {
  Phase phase = Phase::prefill;
  int64_t batch = 1;
  int64_t tokens = 1;   // new tokens per sequence (1 for decode)
  int64_t context = 1;  // tokens each sequence attends, the new ones included
  // In the held-out split fixed by the bench run when it wrote the file (every third point of
  // the grid): never fitted, only checked.
  bool held_out = false;
  double step_s = 0.0;  // median device time of the whole step
  double step_min_s = 0.0, step_max_s = 0.0;
  int64_t repeats = 0;  // 0: not given
  // The context the point's passes ran at, which the fit and the validation price (a graphed
  // decode plans its splits at that context's power-of-two bucket, so a point at 1024 whose
  // passes ran at 1025-1028 crosses into the next): the file's `profiled_context` (the
  // profiled pass, a token or two past the timed ones); in files without it, for a decode point
  // with `repeats`, context + 1 + repeats (bench's default one warmup pass, which every profile
  // of ours ran with); else the context. 0 (a point built in code): the context.
  int64_t pass_context = 0;
  std::vector<EngineClassMeasure> kernels;  // may be empty (no profiled pass)
  int index = 0;                            // position in the file's points
  // "prefill b1 t512" / "decode b8 ctx1024"
  std::string label() const;
  double kernel_seconds() const;
  int64_t kernel_launches() const;
};

struct EngineProfile {
  std::string path;
  std::string model, hardware, device_name, measured_at, commit;
  EngineSwitches switches;
  std::vector<EngineProfilePoint> points;
};

// The profile's `model` field for a bench run of `model_argument`: a shipped name as such; a
// config.json path or a checkpoint folder as the path to its config.json, as given (the shipped
// name of a path would name no shipped model). `loaded_name` is the name the loader gave.
std::string profile_model_field(const std::string& model_argument, const std::string& loaded_name);

// Where a profile's path-like `model` is: as given (from the working folder), else relative to
// the profile file's folder or any folder above it (a bench run writes the path it was given,
// e.g. from a repository's root, and the file is read from anywhere in it); unchanged when none
// exists (loading it then names the path).
std::string resolve_profile_model(const std::string& model, const std::string& profile_path);

// Parses one file's document. Every bad field is an InputError naming the file (`path`) and
// the field ("engine profile 'F': points[3].kernels[1]: field 'ms' must be a number, ...").
EngineProfile parse_engine_profile(const nlohmann::json& document, const std::string& path);
EngineProfile load_engine_profile(const std::string& path);
// Several files (a data set); InputError when there are none.
std::vector<EngineProfile> load_engine_profiles(const std::vector<std::string>& paths);

// The one hardware name all profiles share; InputError naming the files when they differ.
std::string common_hardware(const std::vector<EngineProfile>& profiles);

}  // namespace inferlab
