// Regression tests for the hardware-template parser's mistyped optional fields
// (docs/UNTRUSTED_INPUTS.md): each used to escape as nlohmann's type_error (exit 1).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "hw/hardware_template.hpp"
#include "test_support.hpp"
#include "util/error.hpp"
#include "util/json_file.hpp"

namespace inferlab {
namespace {

std::string error_of(const nlohmann::json& doc) {
  try {
    parse_hardware_template(doc, "template");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(HardwareTemplateFuzzFindings, MistypedBaseAndSourcesAreInputErrors) {
  EXPECT_NE(error_of({{"name", "t"}, {"display_name", "T"}, {"base", 5}}).find("'base' must be"),
            std::string::npos);
  // The shipped H100 template with its sources replaced by a list.
  nlohmann::json doc =
      read_json_file(testing::test_data_dir() + "/templates/h100-sxm.json", "template");
  EXPECT_EQ(error_of(doc), "(no error)");
  doc["sources"] = nlohmann::json::array();
  EXPECT_NE(error_of(doc).find("'sources' must be an object"), std::string::npos);
}

TEST(HardwareTemplateFuzzFindings, HugeOptionalCountsAreInputErrorsNotCasts) {
  // fp64_lanes = 1e300 was cast to int before its range check (undefined behaviour, UBSan's
  // float-cast-overflow); every optional count is now range-checked as a whole number first.
  const nlohmann::json base =
      read_json_file(testing::test_data_dir() + "/templates/h100-sxm.json", "template");
  for (const auto& [object, key] : {std::pair<std::string, std::string>{"core", "fp64_lanes"},
                                    {"core", "int32_lanes"},
                                    {"memory", "phys_on_die"},
                                    {"", "physical_core_count"}}) {
    nlohmann::json doc = base;
    auto& target = object.empty() ? doc : doc[object];
    target[key] = 1e300;
    EXPECT_NE(error_of(doc).find("'" + key + "' must be a whole number"), std::string::npos) << key;
    target[key] = int64_t{1} << 40;
    EXPECT_NE(error_of(doc).find("out of range"), std::string::npos) << key;
  }
}

}  // namespace
}  // namespace inferlab
