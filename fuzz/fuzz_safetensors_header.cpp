// A safetensors file as mapped from disk: the 8-byte length, the JSON header and the data
// section it describes; then what the loaders ask of every tensor.
#include "engine/safetensors.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferlab;
  fuzz::accept_input_errors([&] {
    const auto header = engine::parse_safetensors_header(data, size, "fuzz.safetensors");
    for (const auto& tensor : header.tensors) {
      (void)tensor.elements();
      (void)tensor.byte_size();
    }
  });
  return 0;
}
