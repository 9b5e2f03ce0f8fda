#include "report/engine_report.hpp"

#include <fmt/format.h>

namespace inferlab {

namespace {
double decode_tokens_per_s(const engine::GenerateResult& result) {
  return result.tpot_s > 0.0 ? 1.0 / result.tpot_s : 0.0;
}
}  // namespace

nlohmann::json init_weights_json(const std::string& out_dir, uint64_t seed,
                                 const engine::InitWeightsResult& result) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& file : result.files) files.push_back(file.string());
  return {{"out_dir", out_dir},
          {"seed", seed},
          {"files", files},
          {"tensors", result.tensors},
          {"parameters", result.parameters},
          {"weight_bytes", result.weight_bytes}};
}

Table init_weights_table(const std::string& out_dir, const engine::InitWeightsResult& result) {
  Table t({"checkpoint", "value"});
  t.add_row({"folder", out_dir});
  t.add_row({"tensors", std::to_string(result.tensors)});
  t.add_row({"parameters", format_count(static_cast<double>(result.parameters))});
  t.add_row({"weights (bf16)", format_bytes(static_cast<double>(result.weight_bytes))});
  for (const auto& file : result.files) t.add_row({"file", file.filename().string()});
  return t;
}

nlohmann::json tokenize_json(const std::vector<std::vector<int32_t>>& tokens) {
  return {{"tokens", tokens}};
}

std::string tokenize_text(const std::vector<std::vector<int32_t>>& tokens) {
  std::string out;
  for (const auto& ids : tokens) out += fmt::format("{}\n", fmt::join(ids, " "));
  return out;
}

nlohmann::json generate_json(const std::string& text, int64_t prompt_tokens,
                             const engine::GenerateResult& result, const std::string& device) {
  return {{"text", text},
          {"tokens", result.tokens},
          {"prompt_tokens", prompt_tokens},
          {"finish_reason", result.finish_reason},
          {"ttft_ms", result.ttft_s * 1e3},
          {"tpot_ms", result.tpot_s * 1e3},
          {"e2e_ms", result.e2e_s * 1e3},
          {"decode_tokens_per_s", decode_tokens_per_s(result)},
          {"device", device}};
}

std::string generate_summary(int64_t prompt_tokens, const engine::GenerateResult& result,
                             const std::string& device) {
  return fmt::format(
      "[{}] prompt {} tokens, generated {} ({}): TTFT {:.1f} ms, TPOT {:.1f} ms, {:.2f} tok/s, "
      "end to end {:.1f} ms\n",
      device, prompt_tokens, result.tokens.size(), result.finish_reason, result.ttft_s * 1e3,
      result.tpot_s * 1e3, decode_tokens_per_s(result), result.e2e_s * 1e3);
}

}  // namespace inferlab
