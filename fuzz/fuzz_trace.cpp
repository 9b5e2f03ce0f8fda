// A request trace for `serve --trace`: the same bytes read as JSON lines and as CSV.
#include <sstream>
#include <string>

#include "fuzz_support.hpp"
#include "serve/workload.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferlab;
  const std::string text(fuzz::as_text(data, size));
  for (TraceFormat format : {TraceFormat::jsonl, TraceFormat::csv}) {
    std::istringstream in(text);
    fuzz::accept_input_errors([&] { (void)parse_trace(in, format, "fuzz"); });
  }
  return 0;
}
