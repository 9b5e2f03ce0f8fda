#include "cost/calibrated/gemm_tile_catalogue.hpp"

#include "util/data_dir.hpp"
#include "util/error.hpp"
#include "util/json_file.hpp"

namespace inferlab {

GemmTileCatalogue load_gemm_tile_catalogue(const std::filesystem::path& path) {
  const nlohmann::json json = read_json_file(path, "GEMM tile catalogue");
  const std::string context = "GEMM tile catalogue '" + path.string() + "'";
  require_string(json, "source", context);  // where the tiles were measured
  if (!json.contains("tiles") || !json["tiles"].is_array() || json["tiles"].empty()) {
    throw InputError(context + ": missing array 'tiles'");
  }
  GemmTileCatalogue tiles;
  for (const auto& tile : json["tiles"]) {
    if (!tile.is_array() || tile.size() != 2 || !tile[0].is_number_integer() ||
        !tile[1].is_number_integer() || tile[0].get<int64_t>() < 1 || tile[1].get<int64_t>() < 1) {
      throw InputError(context + ": each tile must be [rows, columns] of positive integers");
    }
    tiles.emplace_back(tile[0].get<int64_t>(), tile[1].get<int64_t>());
  }
  return tiles;
}

const GemmTileCatalogue& cublas_gemm_tiles() {
  static const GemmTileCatalogue tiles =
      load_gemm_tile_catalogue(data_dir() / "calibrated" / "gemm_tiles" / "cublas13_hopper.json");
  return tiles;
}

}  // namespace inferlab
