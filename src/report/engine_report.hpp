#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/generate.hpp"
#include "engine/init_weights.hpp"
#include "report/table.hpp"

namespace inferlab {

// `init-weights`: {out_dir, files[], tensors, parameters, weight_bytes, seed}.
nlohmann::json init_weights_json(const std::string& out_dir, uint64_t seed,
                                 const engine::InitWeightsResult& result);
Table init_weights_table(const std::string& out_dir, const engine::InitWeightsResult& result);

// `tokenize`: {"tokens": [[ids...], ...]} in input order; the table: one line of ids per input.
nlohmann::json tokenize_json(const std::vector<std::vector<int32_t>>& tokens);
std::string tokenize_text(const std::vector<std::vector<int32_t>>& tokens);

// `generate`: {text, tokens, prompt_tokens, finish_reason, ttft_ms, tpot_ms, e2e_ms,
// decode_tokens_per_s, device}; the stderr summary line of the streamed text run.
nlohmann::json generate_json(const std::string& text, int64_t prompt_tokens,
                             const engine::GenerateResult& result, const std::string& device);
std::string generate_summary(int64_t prompt_tokens, const engine::GenerateResult& result,
                             const std::string& device);

}  // namespace inferlab
