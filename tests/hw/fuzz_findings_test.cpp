// Regression tests for the hardware-template parser's mistyped optional fields
// (docs/UNTRUSTED_INPUTS.md): each used to escape as nlohmann's type_error (exit 1).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

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

}  // namespace
}  // namespace inferlab
