#include "report/step_report.hpp"

#include <fmt/format.h>

#include "report/prediction_report.hpp"
#include "report/sustained_report.hpp"

namespace inferlab {

nlohmann::json step_report_json(const StepRun& run) {
  nlohmann::json out = step_to_json(*run.step);
  out["model"] = run.model;
  out["hardware"] = run.hardware;
  out["hardware_source"] = run.hardware_source;
  out["phase"] = run.phase;
  out["batch"] = run.batch;
  out[run.phase == "prefill" ? "tokens" : "context"] = run.context;
  out["sustained_clock"] = sustained_clock_json(run.sustained);
  return out;
}

std::string step_report_text(const StepRun& run) {
  return fmt::format("{} step of {} on {}: batch {}, {} {}: {} ms ({} kernels)\n{}\n", run.phase,
                     run.model, run.hardware_display_name, run.batch,
                     run.phase == "prefill" ? "tokens" : "context", run.context,
                     format_ms(run.step->time_s), run.step->kernels,
                     sustained_clock_line(run.sustained)) +
         step_table(*run.step).to_text();
}

std::string step_report_csv(const StepRun& run) {
  return step_csv_table(*run.step, run.phase).to_csv();
}

}  // namespace inferlab
