// tokenizer.json text (a download from a hub): the parser and the BPE model's checks, then an
// encode and decode with whatever it accepted (inconsistent merges or ids show up there).
#include <cstdint>
#include <vector>

#include "engine/tokenizer/tokenizer.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferlab;
  fuzz::accept_input_errors([&] {
    const auto tokenizer = engine::Tokenizer::from_json(fuzz::as_text(data, size), "fuzz.json");
    const auto ids = tokenizer.encode("Hello world, héllo 123 <|eot|> \xff\xfe 日本");
    (void)tokenizer.decode(ids);
    std::vector<int32_t> first;
    for (int32_t id = 0; id < tokenizer.vocab_size() && id < 512; ++id) first.push_back(id);
    (void)tokenizer.decode(first);  // InputError for a hole in the ids is documented
  });
  return 0;
}
