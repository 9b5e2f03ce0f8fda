// A Hugging Face config.json: the shared model parser (predictions) and the engine's Llama
// parser, on the same text, then the parameter counts every prediction computes first.
#include "engine/llama_config.hpp"
#include "fuzz_support.hpp"
#include "model/model_config.hpp"
#include "util/json_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferlab;
  fuzz::accept_input_errors([&] {
    const auto json = parse_json_text(fuzz::as_text(data, size), "config.json");
    fuzz::accept_input_errors([&] {
      const ModelConfig model = parse_model_config(json, "fuzz", "config.json");
      (void)model.total_params();
      (void)model.active_params_per_token();
    });
    fuzz::accept_input_errors([&] {
      const auto llama = engine::parse_llama_config(json, "fuzz", "config.json");
      (void)llama.model.total_params();
    });
  });
  return 0;
}
