#include "fit/engine_profile.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "model/engine_blocks.hpp"
#include "util/error.hpp"
#include "util/json_file.hpp"

namespace inferlab {

namespace {

constexpr int64_t kMaxSize = int64_t{1} << 24;

// A number >= 0 (strictly > 0 when `positive`), finite.
double non_negative(const nlohmann::json& object, const char* key, const std::string& context,
                    bool positive = false) {
  const double v = require_number(object, key, context);
  if (positive ? !(v > 0.0) : !(v >= 0.0)) {
    throw InputError(fmt::format("{}: field '{}' must be {}, got {}", context, key,
                                 positive ? "positive" : "non-negative", v));
  }
  return v;
}

EngineClassMeasure parse_kernel(const nlohmann::json& row, const std::string& context) {
  if (!row.is_object()) throw InputError(context + ": expected an object");
  EngineClassMeasure k;
  k.kernel = require_string(row, "kernel", context);
  if (!is_engine_kernel_class(k.kernel)) {
    throw InputError(context + ": field 'kernel' is '" + k.kernel +
                     "'; known: " + join_names(kEngineKernelClasses));
  }
  k.seconds = non_negative(row, "ms", context) * 1e-3;
  k.bytes = non_negative(row, "bytes", context);
  k.flops = non_negative(row, "flops", context);
  k.launches = require_count(row, "launches", context, 0, kMaxSize);
  return k;
}

EngineProfilePoint parse_point(const nlohmann::json& row, const std::string& context, int index) {
  if (!row.is_object()) throw InputError(context + ": expected an object");
  EngineProfilePoint p;
  p.index = index;
  const std::string phase = require_string(row, "phase", context);
  if (phase != "prefill" && phase != "decode") {
    throw InputError(context + ": field 'phase' must be prefill or decode, got '" + phase + "'");
  }
  p.phase = phase == "prefill" ? Phase::prefill : Phase::decode;
  p.batch = require_count(row, "batch", context, 1, kMaxSize);
  p.tokens = require_count(row, "tokens", context, 1, kMaxSize);
  p.context = require_count(row, "context", context, 1, kMaxSize);
  if (p.phase == Phase::decode && p.tokens != 1) {
    throw InputError(
        fmt::format("{}: field 'tokens' of a decode point must be 1, got {}", context, p.tokens));
  }
  if (p.context < p.tokens) {
    throw InputError(fmt::format("{}: field 'context' ({}) must be at least 'tokens' ({})", context,
                                 p.context, p.tokens));
  }
  const std::string split = require_string(row, "split", context);
  if (split != "fit" && split != "holdout") {
    throw InputError(context + ": field 'split' must be fit or holdout, got '" + split + "'");
  }
  p.held_out = split == "holdout";
  p.step_s = non_negative(row, "step_ms", context, true) * 1e-3;
  p.step_min_s = row.contains("step_min_ms")
                     ? non_negative(row, "step_min_ms", context, true) * 1e-3
                     : p.step_s;
  p.step_max_s = row.contains("step_max_ms")
                     ? non_negative(row, "step_max_ms", context, true) * 1e-3
                     : p.step_s;
  if (!(p.step_min_s <= p.step_s && p.step_s <= p.step_max_s)) {
    throw InputError(context + ": fields 'step_min_ms' <= 'step_ms' <= 'step_max_ms' do not hold");
  }
  if (row.contains("repeats")) p.repeats = require_count(row, "repeats", context, 1, kMaxSize);
  p.pass_context = p.context;
  if (row.contains("profiled_context")) {
    p.pass_context = require_count(row, "profiled_context", context, p.context, kMaxSize);
  } else if (p.phase == Phase::decode && p.repeats > 0) {
    p.pass_context = p.context + 1 + p.repeats;
  }
  if (!row.contains("kernels") || !row["kernels"].is_array()) {
    throw InputError(context + ": missing array 'kernels' (it may be empty)");
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < row["kernels"].size(); ++i) {
    const std::string kctx = fmt::format("{}.kernels[{}]", context, i);
    EngineClassMeasure k = parse_kernel(row["kernels"][i], kctx);
    if (!seen.insert(k.kernel).second) {
      throw InputError(kctx + ": kernel class '" + k.kernel + "' appears twice in this point");
    }
    p.kernels.push_back(std::move(k));
  }
  return p;
}

}  // namespace

std::string EngineProfilePoint::label() const {
  return phase == Phase::prefill ? fmt::format("prefill b{} t{}", batch, tokens)
                                 : fmt::format("decode b{} ctx{}", batch, context);
}

double EngineProfilePoint::kernel_seconds() const {
  double total = 0.0;
  for (const auto& k : kernels) total += k.seconds;
  return total;
}

int64_t EngineProfilePoint::kernel_launches() const {
  int64_t total = 0;
  for (const auto& k : kernels) total += k.launches;
  return total;
}

EngineProfile parse_engine_profile(const nlohmann::json& document, const std::string& path) {
  const std::string context = "engine profile '" + path + "'";
  if (!document.is_object()) throw InputError(context + ": expected a JSON object");
  const std::string kind = require_string(document, "kind", context);
  if (kind != "engine_profile") {
    throw InputError(context + ": field 'kind' must be \"engine_profile\", got '" + kind + "'");
  }
  EngineProfile profile;
  profile.path = path;
  profile.model = require_string(document, "model", context);
  profile.hardware = require_string(document, "hardware", context);
  if (profile.model.empty()) throw InputError(context + ": field 'model' is empty");
  profile.model = resolve_profile_model(profile.model, path);
  if (profile.hardware.empty()) throw InputError(context + ": field 'hardware' is empty");
  profile.device_name = optional_string(document, "device_name", "", context);
  profile.measured_at = optional_string(document, "measured_at", "", context);
  profile.commit = optional_string(document, "commit", "", context);
  if (!document.contains("switches")) throw InputError(context + ": missing object 'switches'");
  profile.switches = parse_engine_switches(document["switches"], context);
  if (!document.contains("points") || !document["points"].is_array() ||
      document["points"].empty()) {
    throw InputError(context + ": missing or empty array 'points'");
  }
  const auto& points = document["points"];
  for (size_t i = 0; i < points.size(); ++i) {
    profile.points.push_back(
        parse_point(points[i], fmt::format("{}: points[{}]", context, i), static_cast<int>(i)));
  }
  return profile;
}

EngineProfile load_engine_profile(const std::string& path) {
  return parse_engine_profile(read_json_file(path, "engine profile"), path);
}

std::vector<EngineProfile> load_engine_profiles(const std::vector<std::string>& paths) {
  if (paths.empty()) throw InputError("no engine profile given (--data FILE [FILE...])");
  std::vector<EngineProfile> out;
  out.reserve(paths.size());
  for (const auto& path : paths) out.push_back(load_engine_profile(path));
  return out;
}

std::string common_hardware(const std::vector<EngineProfile>& profiles) {
  if (profiles.empty()) throw InputError("no engine profile given");
  for (const auto& p : profiles) {
    if (p.hardware != profiles.front().hardware) {
      throw InputError("engine profiles of different hardware: '" + profiles.front().path +
                       "' is " + profiles.front().hardware + ", '" + p.path + "' is " + p.hardware +
                       "; fit one hardware at a time");
    }
  }
  return profiles.front().hardware;
}

std::string profile_model_field(const std::string& model_argument, const std::string& loaded_name) {
  std::error_code ec;
  const std::filesystem::path config = std::filesystem::path(model_argument) / "config.json";
  if (std::filesystem::is_regular_file(config, ec)) return config.string();  // a checkpoint
  const bool path_like =
      model_argument.find('/') != std::string::npos || model_argument.ends_with(".json");
  return path_like ? model_argument : loaded_name;
}

std::string resolve_profile_model(const std::string& model, const std::string& profile_path) {
  const bool path_like = model.find('/') != std::string::npos || model.ends_with(".json");
  const std::filesystem::path given(model);
  std::error_code ec;
  if (!path_like || given.is_absolute() || std::filesystem::exists(given, ec)) return model;
  std::filesystem::path folder =
      std::filesystem::absolute(profile_path, ec).lexically_normal().parent_path();
  for (; !folder.empty(); folder = folder.parent_path()) {
    const std::filesystem::path candidate = folder / given;
    if (std::filesystem::exists(candidate, ec)) return candidate.lexically_normal().string();
    if (folder == folder.root_path()) break;
  }
  return model;
}

}  // namespace inferlab
