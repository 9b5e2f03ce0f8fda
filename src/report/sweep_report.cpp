#include "report/sweep_report.hpp"

#include <fmt/format.h>

#include "report/sustained_report.hpp"

namespace inferlab {

nlohmann::json sweep_json(const std::string& model, const std::string& hardware,
                          const SustainedClockUse& sustained, const std::vector<SweepRow>& rows) {
  nlohmann::json out = {{"model", model},
                        {"hardware", hardware},
                        {"sustained_clock", sustained_clock_json(sustained)}};
  nlohmann::json list = nlohmann::json::array();
  for (const auto& r : rows) {
    list.push_back({{"batch", r.batch},
                    {"input_tokens", r.input},
                    {"output_tokens", r.output},
                    {"tp", r.tp},
                    {"weights", std::string(dtype_name(r.weights))},
                    {"prefill_ms", r.prefill_s * 1e3},
                    {"ttft_ms", r.prefill_s * 1e3},
                    {"tpot_ms", r.tpot_s * 1e3},
                    {"e2e_ms", r.e2e_s * 1e3},
                    {"decode_tokens_per_s", r.decode_tokens_per_s},
                    {"memory_total_bytes", r.memory_total_bytes},
                    {"fits", r.fits}});
  }
  out["rows"] = list;
  return out;
}

Table sweep_table(const std::vector<SweepRow>& rows, OutputFormat format) {
  Table table({"batch", "input", "output", "tp", "weights", "prefill_ms", "tpot_ms", "e2e_ms",
               "decode_tok_per_s", "memory_bytes", "fits"});
  const bool csv = format == OutputFormat::csv;
  for (const auto& r : rows) {
    table.add_row(
        {std::to_string(r.batch), std::to_string(r.input), std::to_string(r.output),
         std::to_string(r.tp), std::string(dtype_name(r.weights)),
         csv ? fmt::format("{:.6g}", r.prefill_s * 1e3) : format_ms(r.prefill_s),
         csv ? fmt::format("{:.6g}", r.tpot_s * 1e3) : format_ms(r.tpot_s),
         csv ? fmt::format("{:.6g}", r.e2e_s * 1e3) : format_ms(r.e2e_s),
         fmt::format("{:.1f}", r.decode_tokens_per_s),
         csv ? fmt::format("{:.6g}", r.memory_total_bytes) : format_bytes(r.memory_total_bytes),
         r.fits ? "yes" : "no"});
  }
  return table;
}

std::string sweep_text(const SustainedClockUse& sustained, const std::vector<SweepRow>& rows) {
  return sustained_clock_line(sustained) + '\n' + sweep_table(rows, OutputFormat::table).to_text();
}

}  // namespace inferlab
