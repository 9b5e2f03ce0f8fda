#include "engine/gptq_config.hpp"

#include <fmt/format.h>

#include "util/error.hpp"

namespace inferlab::engine {

std::optional<GptqConfig> parse_gptq_config(const nlohmann::json& hf_config,
                                            const std::string& context) {
  if (!hf_config.is_object() || !hf_config.contains("quantization_config")) return std::nullopt;
  const auto& q = hf_config["quantization_config"];
  if (!q.is_object()) throw InputError(context + ": quantization_config is not an object");
  const std::string method = q.value("quant_method", std::string());
  if (method != "gptq") {
    throw InputError(fmt::format(
        "{}: quantization_config's quant_method '{}' is not supported; the engine reads "
        "GPTQ checkpoints (quant_method \"gptq\") and quantizes bf16 ones itself (--weights)",
        context, method));
  }
  GptqConfig gptq;
  auto number = [&](const char* key, int64_t fallback) {
    if (!q.contains(key)) return fallback;
    if (!q[key].is_number_integer())
      throw InputError(context + ": GPTQ " + key + " not an integer");
    return q[key].get<int64_t>();
  };
  const int64_t bits = number("bits", 4);
  if (bits != 4 && bits != 8) {
    throw InputError(fmt::format("{}: GPTQ with {} bits; the engine reads 4 and 8", context, bits));
  }
  gptq.bits = static_cast<int>(bits);
  gptq.group_size = number("group_size", 128);
  if (gptq.group_size != -1 && (gptq.group_size < 32 || gptq.group_size % 32 != 0)) {
    throw InputError(fmt::format("{}: GPTQ group_size {} (need -1 or a multiple of 32)", context,
                                 gptq.group_size));
  }
  gptq.sym = q.value("sym", true);
  gptq.desc_act = q.value("desc_act", false);
  if (gptq.desc_act) {
    throw InputError(context +
                     ": GPTQ with desc_act (act-order) is not supported: its groups are not "
                     "contiguous along the input; quantize without act-order");
  }
  const std::string format = q.value("checkpoint_format", std::string("gptq"));
  if (format != "gptq" && format != "gptq_v2") {
    throw InputError(context + ": GPTQ checkpoint_format '" + format + "' (known: gptq, gptq_v2)");
  }
  gptq.zeros_minus_one = format == "gptq";
  return gptq;
}

}  // namespace inferlab::engine
