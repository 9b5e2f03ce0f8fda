#include "cost/delay_factors.hpp"

#include <cstdlib>
#include <sstream>

#include "util/data_dir.hpp"
#include "util/error.hpp"
#include "util/json_file.hpp"
#include "util/json_writer.hpp"

namespace inferlab {

void DelayFactors::set(OpClass cls, double value) {
  if (!(value >= 0.1 && value <= 100.0)) {
    throw InputError("delay factor for " + std::string(op_class_name(cls)) +
                     " must be in [0.1, 100], got " + std::to_string(value));
  }
  factor[static_cast<int>(cls)] = value;
}

DelayFactors load_spec_delay_factors() {
  return load_delay_factors_file((data_dir() / "delay_factors" / "spec.json").string());
}

DelayFactors load_delay_factors(const HardwareSpec& hardware) {
  if (hardware.profile) {
    auto fitted = data_dir() / "delay_factors" / (hardware.name + ".json");
    std::error_code ec;
    if (std::filesystem::is_regular_file(fitted, ec))
      return load_delay_factors_file(fitted.string());
  }
  return load_spec_delay_factors();
}

DelayFactors load_delay_factors_file(const std::string& path) {
  std::filesystem::path file = path;
  auto json = read_json_file(file, "delay factors");
  const std::string context = "delay factors '" + file.string() + "'";
  DelayFactors f;
  f.source = require_string(json, "source", context);
  f.kernel_latency_s = require_number(json, "kernel_latency_s", context);
  if (!(f.kernel_latency_s >= 0.0 && f.kernel_latency_s < 1e-3)) {
    throw InputError(context + ": kernel_latency_s must be in [0, 1 ms)");
  }
  f.gemv_max_rows = require_count(json, "gemv_max_rows", context, 1, 4096);
  f.single_op_floor_s = optional_number(json, "single_op_floor_s", 0.0, context);
  if (!(f.single_op_floor_s >= 0.0 && f.single_op_floor_s < 1e-3)) {
    throw InputError(context + ": single_op_floor_s must be in [0, 1 ms)");
  }
  if (!json.contains("factors") || !json["factors"].is_object()) {
    throw InputError(context + ": missing object 'factors'");
  }
  for (int i = 0; i < kOpClassCount; ++i) {
    auto cls = static_cast<OpClass>(i);
    f.set(cls, require_number(json["factors"], std::string(op_class_name(cls)), context));
  }
  return f;
}

nlohmann::json delay_factors_to_json(const DelayFactors& f, const nlohmann::json& fit_summary) {
  nlohmann::json factors = nlohmann::json::object();
  for (int i = 0; i < kOpClassCount; ++i) {
    factors[std::string(op_class_name(static_cast<OpClass>(i)))] = f.factor[i];
  }
  return {{"source", f.source},
          {"kernel_latency_s", f.kernel_latency_s},
          {"gemv_max_rows", f.gemv_max_rows},
          {"single_op_floor_s", f.single_op_floor_s},
          {"factors", factors},
          {"fit", fit_summary}};
}

void write_delay_factors_file(const std::string& path, const DelayFactors& factors,
                              const nlohmann::json& fit_summary) {
  write_json_file(path, delay_factors_to_json(factors, fit_summary));
}

void apply_delay_factor_overrides(DelayFactors& factors, const std::string& overrides) {
  std::stringstream list(overrides);
  std::string item;
  while (std::getline(list, item, ',')) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
      throw InputError("--delay-factor expects class=value (e.g. gemm=1.2), got '" + item + "'");
    }
    OpClass cls = parse_op_class(item.substr(0, eq));
    std::string text = item.substr(eq + 1);
    char* end = nullptr;
    double value = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || *end != '\0') {
      throw InputError("--delay-factor value '" + text + "' is not a number");
    }
    factors.set(cls, value);
  }
}

}  // namespace inferlab
