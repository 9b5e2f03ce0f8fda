// Regression tests for what fuzzing found in the model parsers (docs/UNTRUSTED_INPUTS.md).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/model_config.hpp"
#include "util/error.hpp"

namespace inferlab {
namespace {

// Fuzz finding (config_json; fuzz/corpus/config_json/finding-model-type-not-a-string.json):
// "model_type": true made nlohmann's value() throw type_error ("run failed", exit 1).
TEST(ModelConfigFuzzFindings, ModelTypeNotAStringIsAnInputError) {
  nlohmann::json config = {{"model_type", true}, {"hidden_size", 64}};
  try {
    parse_model_config(config, "t", "config.json");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'model_type' must be a string"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace inferlab
