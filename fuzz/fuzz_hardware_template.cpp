// A hardware template (data/templates/*.json or a user's path), after its base chain was merged:
// the parser, then the spec sheet derived from it that every simulation starts from.
#include "fuzz_support.hpp"
#include "hw/hardware_spec.hpp"
#include "hw/hardware_template.hpp"
#include "util/json_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferlab;
  fuzz::accept_input_errors([&] {
    const auto json = parse_json_text(fuzz::as_text(data, size), "hardware template");
    const HardwareTemplate t = parse_hardware_template(json, "hardware template");
    (void)spec_of_template(t);
  });
  return 0;
}
