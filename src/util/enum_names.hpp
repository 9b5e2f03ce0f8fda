#pragma once
// One table of (value, name) pairs per enum: names for output, parsing for input, and the list
// of known names for error messages all come from the same table. (C++17: CUDA sources include
// headers that use it.)
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/error.hpp"

namespace inferlab {

template <typename Enum, std::size_t Count>
using EnumNameTable = std::array<std::pair<Enum, std::string_view>, Count>;

// The name of `value`, or "?" for a value the table does not list.
template <typename Enum, std::size_t Count>
constexpr std::string_view enum_name(const EnumNameTable<Enum, Count>& table, Enum value) {
  for (const auto& [entry, name] : table)
    if (entry == value) return name;
  return "?";
}

// Every name of the table, in table order.
template <typename Enum, std::size_t Count>
std::vector<std::string> enum_names(const EnumNameTable<Enum, Count>& table) {
  std::vector<std::string> names;
  names.reserve(Count);
  for (const auto& entry : table) names.emplace_back(entry.second);
  return names;
}

// The value named `text`; InputError "unknown <what> '<text>'; known: a, b, c" otherwise.
template <typename Enum, std::size_t Count>
Enum parse_enum(const EnumNameTable<Enum, Count>& table, std::string_view text,
                std::string_view what) {
  for (const auto& [entry, name] : table)
    if (name == text) return entry;
  throw InputError("unknown " + std::string(what) + " '" + std::string(text) +
                   "'; known: " + join_names(enum_names(table)));
}

}  // namespace inferlab
