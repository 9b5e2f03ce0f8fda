#include "util/enum_names.hpp"

#include <gtest/gtest.h>

namespace inferlab {
namespace {

enum class Fruit { apple, pear, plum };
constexpr EnumNameTable<Fruit, 3> kFruitNames{
    {{Fruit::apple, "apple"}, {Fruit::pear, "pear"}, {Fruit::plum, "plum"}}};

TEST(EnumNames, NamesAndParsesFromOneTable) {
  static_assert(enum_name(kFruitNames, Fruit::pear) == "pear");
  EXPECT_EQ(enum_name(kFruitNames, static_cast<Fruit>(7)), "?");
  EXPECT_EQ(parse_enum(kFruitNames, "plum", "fruit"), Fruit::plum);
  EXPECT_EQ(enum_names(kFruitNames), (std::vector<std::string>{"apple", "pear", "plum"}));
}

TEST(EnumNames, UnknownNameListsTheKnownOnes) {
  try {
    parse_enum(kFruitNames, "fig", "fruit");
    FAIL() << "fig parsed";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "unknown fruit 'fig'; known: apple, pear, plum");
  }
}

}  // namespace
}  // namespace inferlab
