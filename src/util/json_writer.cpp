#include "util/json_writer.hpp"

#include <fstream>

#include "util/error.hpp"

namespace inferlab {

void write_json_file(const std::string& path, const nlohmann::json& json) {
  std::ofstream out(path);
  if (!out) throw InputError("cannot write '" + path + "'");
  out << json.dump(2) << '\n';
}

}  // namespace inferlab
