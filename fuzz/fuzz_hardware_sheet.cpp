// A GPU spec sheet (data/hardware/*.json or a user's path).
#include "fuzz_support.hpp"
#include "hw/hardware_spec.hpp"
#include "util/json_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferlab;
  fuzz::accept_input_errors([&] {
    const auto json = parse_json_text(fuzz::as_text(data, size), "hardware sheet");
    const HardwareSpec spec = parse_hardware_sheet(json, "hardware sheet");
    (void)spec.supported_dtype_names();
  });
  return 0;
}
