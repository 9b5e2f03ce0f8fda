// Reference data for fit and validate: a PyTorch reference file's "ops" rows
// (validation/torch_reference.py) and a profile's probe sweeps, on the same document.
#include "fit/reference_data.hpp"
#include "fuzz_support.hpp"
#include "util/json_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferlab;
  fuzz::accept_input_errors([&] {
    const auto json = parse_json_text(fuzz::as_text(data, size), "reference data");
    fuzz::accept_input_errors(
        [&] { (void)fastest_measured_s(measured_ops_from_reference(json, "reference data")); });
    fuzz::accept_input_errors([&] { (void)measured_ops_from_profile(json, "profile"); });
  });
  return 0;
}
