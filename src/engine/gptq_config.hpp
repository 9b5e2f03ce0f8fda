#pragma once
// A GPTQ checkpoint's quantization_config (engine/quant/gptq.hpp reads its modules): what
// llama_config.hpp keeps of a checkpoint's config.json, below the quantization code that uses it.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace inferlab::engine {

struct GptqConfig {
  int bits = 4;              // 4 or 8
  int64_t group_size = 128;  // −1: one group per column
  bool sym = true;
  bool desc_act = false;        // act-order: refused (groups not contiguous along the input)
  bool zeros_minus_one = true;  // checkpoint_format "gptq" (v1)
};

// The config.json's quantization_config when it is GPTQ; nullopt without one. InputError naming
// `context` for another quant_method, bits other than 4 or 8, act-order, a bad group size.
std::optional<GptqConfig> parse_gptq_config(const nlohmann::json& hf_config,
                                            const std::string& context);

}  // namespace inferlab::engine
