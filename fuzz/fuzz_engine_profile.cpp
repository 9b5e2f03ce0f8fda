// Engine measurements and the engine's calibration (`fit --engine`, `validate --engine --data`,
// `--engine-costs`): an engine profile (`inferlab bench --profile` output) and an engine costs
// file, on the same document.
#include "cost/engine/engine_costs.hpp"
#include "fit/engine_profile.hpp"
#include "fuzz_support.hpp"
#include "util/json_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferlab;
  fuzz::accept_input_errors([&] {
    const auto json = parse_json_text(fuzz::as_text(data, size), "engine profile");
    fuzz::accept_input_errors([&] {
      const EngineProfile profile = parse_engine_profile(json, "fuzz.json");
      for (const auto& point : profile.points) (void)point.kernel_seconds();
    });
    fuzz::accept_input_errors([&] { (void)engine_costs_from_json(json, "engine costs"); });
  });
  return 0;
}
