// model.safetensors.index.json of a sharded checkpoint: its weight_map (shard names must not
// leave the folder). Opening the shards is the safetensors target's job.
#include "engine/checkpoint.hpp"
#include "fuzz_support.hpp"
#include "util/json_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferlab;
  fuzz::accept_input_errors([&] {
    const auto json = parse_json_text(fuzz::as_text(data, size), "checkpoint index");
    (void)engine::parse_checkpoint_index(json, "checkpoint index");
  });
  return 0;
}
