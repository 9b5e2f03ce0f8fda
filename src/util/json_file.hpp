#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace inferlab {

// Bounds on a JSON file from a user (spec sheets, templates, profiles, configs, reference data,
// checkpoint indexes; the largest real ones are under 1 MB and nest under 10 levels): a larger
// file is refused before it is read, deeper nesting as it is parsed (nlohmann's copy, compare
// and dump recurse, so depth would otherwise become stack depth).
inline constexpr uint64_t kMaxJsonFileBytes = uint64_t{64} << 20;
inline constexpr int kMaxJsonDepth = 64;

// Reads and parses a JSON file; a missing, unreadable, oversized, too deeply nested or malformed
// file is an InputError that names the file and what it was meant to be.
nlohmann::json read_json_file(const std::filesystem::path& path, const std::string& what);
// Parses JSON text already in memory (what read_json_file does after reading); malformed or too
// deeply nested text is an InputError "<context> is not valid JSON: ...". The fuzz targets
// enter through it.
nlohmann::json parse_json_text(std::string_view text, const std::string& context);

// Typed field access with errors that name the file (context) and the field.
double require_number(const nlohmann::json& object, const std::string& key,
                      const std::string& context);
double optional_number(const nlohmann::json& object, const std::string& key, double fallback,
                       const std::string& context);
// A whole number in [min_value, max_value].
int64_t require_count(const nlohmann::json& object, const std::string& key,
                      const std::string& context, int64_t min_value = 1,
                      int64_t max_value = int64_t{1} << 40);
// `fallback` when the field is absent or null, else require_count's checks: a whole number in
// [min_value, max_value] (never a double cast to int, which is undefined past int's range).
int64_t optional_count(const nlohmann::json& object, const std::string& key, int64_t fallback,
                       const std::string& context, int64_t min_value, int64_t max_value);
std::string require_string(const nlohmann::json& object, const std::string& key,
                           const std::string& context);
// `fallback` when the field is absent or null; an InputError when it is not a string (nlohmann's
// value(key, fallback) would throw its own type_error there: "run failed", exit 1).
std::string optional_string(const nlohmann::json& object, const std::string& key,
                            const std::string& fallback, const std::string& context);
bool optional_bool(const nlohmann::json& object, const std::string& key, bool fallback,
                   const std::string& context);

}  // namespace inferlab
