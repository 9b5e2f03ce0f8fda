// A measured hardware profile (`inferlab probe` output, possibly from another machine).
#include "fuzz_support.hpp"
#include "hw/profile.hpp"
#include "util/json_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferlab;
  fuzz::accept_input_errors([&] {
    auto json = parse_json_text(fuzz::as_text(data, size), "hardware profile");
    (void)parse_profile(std::move(json), "fuzz.json");
  });
  return 0;
}
