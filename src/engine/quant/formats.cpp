#include "engine/quant/formats.hpp"

#include <fmt/format.h>

#include "util/error.hpp"

namespace inferlab::engine {

namespace {

DType parse_one_of(const std::string& name, const char* flag,
                   std::initializer_list<DType> allowed) {
  std::string known;
  for (DType dtype : allowed) {
    if (!known.empty()) known += ", ";
    known += dtype_name(dtype);
    if (dtype_name(dtype) == name) return dtype;
  }
  throw InputError(fmt::format("unknown {} '{}'; known: {}", flag, name, known));
}

}  // namespace

std::string QuantConfig::describe() const {
  std::string text(dtype_name(weights));
  if (weights == DType::int4) text += fmt::format(" g{}", group_size);
  if (activations == DType::int8) text += " w8a8";
  if (kv != DType::bf16) text += fmt::format(", kv {}", dtype_name(kv));
  return text;
}

DType parse_weight_format(const std::string& name) {
  return parse_one_of(name, "--weights", {DType::bf16, DType::fp8, DType::int8, DType::int4});
}

DType parse_kv_format(const std::string& name) {
  return parse_one_of(name, "--kv", {DType::bf16, DType::fp8, DType::int8});
}

DType parse_activation_format(const std::string& name) {
  return parse_one_of(name, "--activations", {DType::bf16, DType::int8});
}

void check_quant_config(const QuantConfig& config, int64_t hidden_size, int64_t intermediate_size,
                        int64_t q_dim) {
  if (config.activations == DType::int8 && config.weights != DType::int8) {
    throw InputError(
        fmt::format("--activations int8 is W8A8 and needs --weights int8 (got --weights {})",
                    dtype_name(config.weights)));
  }
  if (config.activations != DType::bf16 && config.activations != DType::int8) {
    throw InputError("--activations must be bf16 or int8");
  }
  if (config.weights == DType::int4 && config.group_size > 0) {
    const int64_t g = config.group_size;
    if (g < 32 || g % 32 != 0) {
      throw InputError(fmt::format("int4 group size {} must be a positive multiple of 32", g));
    }
    for (int64_t width : {hidden_size, intermediate_size, q_dim}) {
      if (width % g != 0) {
        throw InputError(fmt::format(
            "int4 groups of {} do not divide a projection's input width of {}", g, width));
      }
    }
  }
  if (!(config.smoothquant_alpha >= 0 && config.smoothquant_alpha <= 1)) {
    throw InputError("the SmoothQuant migration strength must be in [0, 1]");
  }
  if (config.calibration_tokens < 1 || config.calibration_tokens > 65536) {
    throw InputError("calibration tokens must be in [1, 65536]");
  }
}

}  // namespace inferlab::engine
