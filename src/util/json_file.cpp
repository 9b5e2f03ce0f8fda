#include "util/json_file.hpp"

#include <cmath>
#include <fstream>
#include <sstream>

#include "util/data_dir.hpp"
#include "util/error.hpp"

namespace inferlab {

nlohmann::json read_json_file(const std::filesystem::path& path, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    std::string note;
    // A shipped file that is missing: say where the data folder was looked for.
    if (auto dir = data_dir().lexically_normal().string();
        path.lexically_normal().string().starts_with(dir)) {
      note = " (" + data_dir_search_note() + ")";
    }
    throw InputError(what + " file '" + path.string() + "' does not exist or is not a file" + note);
  }
  if (const auto bytes = std::filesystem::file_size(path, ec); !ec && bytes > kMaxJsonFileBytes) {
    throw InputError(what + " file '" + path.string() + "' is " + std::to_string(bytes) +
                     " bytes, above the limit of " + std::to_string(kMaxJsonFileBytes));
  }
  std::ifstream in(path);
  if (!in) throw InputError("cannot read " + what + " file '" + path.string() + "'");
  std::stringstream text;
  text << in.rdbuf();
  return parse_json_text(text.str(), what + " file '" + path.string() + "'");
}

nlohmann::json parse_json_text(std::string_view text, const std::string& context) {
  // Called for every value with its nesting depth; refuses before the deeper value is built.
  const auto bounded_depth = [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth > kMaxJsonDepth) {
      throw InputError(context + " is not valid JSON: nested deeper than " +
                       std::to_string(kMaxJsonDepth) + " levels");
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), bounded_depth);
  } catch (const nlohmann::json::exception& e) {
    // parse_error, and out_of_range for a number beyond double's range ("1e805").
    throw InputError(context + " is not valid JSON: " + e.what());
  }
}

namespace {
const nlohmann::json& field(const nlohmann::json& object, const std::string& key,
                            const std::string& context) {
  if (!object.is_object()) throw InputError(context + ": expected a JSON object");
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    throw InputError(context + ": missing field '" + key + "'");
  }
  return *it;
}
}  // namespace

double require_number(const nlohmann::json& object, const std::string& key,
                      const std::string& context) {
  const auto& value = field(object, key, context);
  if (!value.is_number()) {
    throw InputError(context + ": field '" + key + "' must be a number, got " + value.dump());
  }
  double number = value.get<double>();
  if (!std::isfinite(number)) throw InputError(context + ": field '" + key + "' is not finite");
  return number;
}

double optional_number(const nlohmann::json& object, const std::string& key, double fallback,
                       const std::string& context) {
  if (!object.contains(key) || object.at(key).is_null()) return fallback;
  return require_number(object, key, context);
}

int64_t require_count(const nlohmann::json& object, const std::string& key,
                      const std::string& context, int64_t min_value, int64_t max_value) {
  const auto& value = field(object, key, context);
  if (!value.is_number_integer() && !value.is_number_unsigned()) {
    throw InputError(context + ": field '" + key + "' must be a whole number, got " + value.dump());
  }
  if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(max_value)) {
    throw InputError(context + ": field '" + key + "' is too large: " + value.dump());
  }
  int64_t number = value.get<int64_t>();
  if (number < min_value || number > max_value) {
    throw InputError(context + ": field '" + key + "' = " + std::to_string(number) +
                     " is out of range [" + std::to_string(min_value) + ", " +
                     std::to_string(max_value) + "]");
  }
  return number;
}

int64_t optional_count(const nlohmann::json& object, const std::string& key, int64_t fallback,
                       const std::string& context, int64_t min_value, int64_t max_value) {
  if (!object.contains(key) || object.at(key).is_null()) return fallback;
  return require_count(object, key, context, min_value, max_value);
}

std::string require_string(const nlohmann::json& object, const std::string& key,
                           const std::string& context) {
  const auto& value = field(object, key, context);
  if (!value.is_string()) {
    throw InputError(context + ": field '" + key + "' must be a string, got " + value.dump());
  }
  return value.get<std::string>();
}

std::string optional_string(const nlohmann::json& object, const std::string& key,
                            const std::string& fallback, const std::string& context) {
  if (!object.is_object()) throw InputError(context + ": expected a JSON object");
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  if (!it->is_string()) throw InputError(context + ": field '" + key + "' must be a string");
  return it->get<std::string>();
}

bool optional_bool(const nlohmann::json& object, const std::string& key, bool fallback,
                   const std::string& context) {
  if (!object.contains(key) || object.at(key).is_null()) return fallback;
  const auto& value = object.at(key);
  if (!value.is_boolean()) {
    throw InputError(context + ": field '" + key + "' must be true or false, got " + value.dump());
  }
  return value.get<bool>();
}

}  // namespace inferlab
