#include "util/field_error.hpp"

#include <gtest/gtest.h>

namespace inferlab {
namespace {

TEST(FieldError, IsAnInputErrorThatNamesItsFields) {
  try {
    throw FieldError("`tp` must be in [1, 1024], got 0");
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "`tp` must be in [1, 1024], got 0");
  }
}

TEST(FieldError, RenameFieldsRewritesEveryMarkedName) {
  auto flag = [](const std::string& field) {
    return field == "input_tokens" ? std::string("--input") : "--" + field;
  };
  EXPECT_EQ(rename_fields("`batch` x (`input_tokens` + `output_tokens`) is too big", flag),
            "--batch x (--input + --output_tokens) is too big");
  EXPECT_EQ(rename_fields("`axes` gives more than 9 designs; narrow the axes", flag),
            "--axes gives more than 9 designs; narrow the axes");
  EXPECT_EQ(rename_fields("no fields here", flag), "no fields here");
  EXPECT_EQ(rename_fields("an `unclosed mark", flag), "an `unclosed mark");
}

}  // namespace
}  // namespace inferlab
