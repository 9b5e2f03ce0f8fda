#include "report/sustained_report.hpp"

namespace inferlab {

nlohmann::json sustained_clock_json(const SustainedClockUse& use) {
  return {{"from", std::string(sustained_from_name(use.from))},
          {"compute_slowdown", use.compute_slowdown},
          {"file", use.file},
          {"note", use.note}};
}

std::string sustained_clock_line(const SustainedClockUse& use) {
  return "sustained clock: " + use.note + "\n";
}

}  // namespace inferlab
