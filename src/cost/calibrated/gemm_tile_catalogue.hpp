#pragma once
#include <cstdint>
#include <filesystem>
#include <utility>
#include <vector>

namespace inferlab {

// Output tiles (token rows, output columns) a GEMM library's kernels use: a measurement (the
// tiles its kernels were seen running), kept in data/calibrated/gemm_tiles/. In the order the
// calibrated model tries them (of equally fast tilings, the first listed wins).
using GemmTileCatalogue = std::vector<std::pair<int64_t, int64_t>>;

// Reads a catalogue file; InputError when missing, malformed or a tile is not positive.
GemmTileCatalogue load_gemm_tile_catalogue(const std::filesystem::path& path);

// cuBLAS 13's tiles on Hopper (data/calibrated/gemm_tiles/cublas13_hopper.json), read once.
const GemmTileCatalogue& cublas_gemm_tiles();

}  // namespace inferlab
