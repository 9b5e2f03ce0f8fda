#include "report/ablation_report.hpp"

#include <fmt/format.h>

namespace inferlab {

std::string ablation_text(const nlohmann::json& j) {
  const auto input = j["input_tokens"].get<int64_t>();
  std::string text = fmt::format(
      "Ablation: {} on {}, batch {}, prefill {} tokens, decode at context {}-{} (medians; "
      "predicted: predict --framework inferlab --hardware {} with the same switches)\n",
      j["model"].get<std::string>(), j["device_name"].get<std::string>(), j["batch"].get<int64_t>(),
      input, input + 1, input + j["output_tokens"].get<int64_t>() - 1,
      j["hardware"].get<std::string>());
  text += fmt::format("{:<58} {:>10} {:>10} {:>9} {:>10} {:>10} {:>9}\n", "step", "prefill ms",
                      "predicted", "of peak", "decode ms", "predicted", "of HBM");
  for (const auto& s : j["steps"]) {
    text += fmt::format("{:<58} {:>10.3f} {:>10.3f} {:>8.1f}% {:>10.3f} {:>10.3f} {:>8.1f}%\n",
                        s["step"].get<std::string>(), s["prefill_ms"].get<double>(),
                        s["predicted_prefill_ms"].get<double>(),
                        100 * s["prefill_of_peak"].get<double>(), s["decode_step_ms"].get<double>(),
                        s["predicted_decode_step_ms"].get<double>(),
                        100 * s["decode_of_probe_hbm_read"].get<double>());
  }
  return text;
}

}  // namespace inferlab
