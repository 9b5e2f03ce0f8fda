#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace inferlab {

// Reads and parses a JSON file; a missing, unreadable or malformed file is an InputError that
// names the file and what it was meant to be.
nlohmann::json read_json_file(const std::filesystem::path& path, const std::string& what);

// Typed field access with errors that name the file (context) and the field.
double require_number(const nlohmann::json& object, const std::string& key,
                      const std::string& context);
double optional_number(const nlohmann::json& object, const std::string& key, double fallback,
                       const std::string& context);
// A whole number in [min_value, max_value].
int64_t require_count(const nlohmann::json& object, const std::string& key,
                      const std::string& context, int64_t min_value = 1,
                      int64_t max_value = int64_t{1} << 40);
std::string require_string(const nlohmann::json& object, const std::string& key,
                           const std::string& context);
bool optional_bool(const nlohmann::json& object, const std::string& key, bool fallback,
                   const std::string& context);

}  // namespace inferlab
