#include "hw/memory_technology.hpp"

#include <array>

namespace inferlab {

namespace {
constexpr double kGB = 1e9;
// Bandwidths are pin rate x width / 8. PHY areas and controller sizes: HBM2e and DDR5 from the
// LLMCompass cost model (Zhang et al., ISCA 2024: 10.45 mm^2 per 1024-bit HBM2e PHY, 1.45 mm^2
// per 32-bit DDR5 PHY, 553 / 90 M transistors per controller unit); the others scaled from
// those by interface width and rate (estimates); the area model takes the controller counts on
// LLMCompass's density basis (src/area/area_model.cpp). Prices per GB: DDR5 2.4 USD and HBM2e 7 USD
// (DRAMeXchange spot, Oct 2023, as LLMCompass uses them); HBM3/HBM3e, LPDDR5 and GDDR6 are
// estimates from 2024 trade-press reports (TrendForce: HBM about 5x DDR5 per bit).
constexpr std::array<MemoryTechnology, 7> kTechnologies = {{
    {MemoryType::hbm2, 307e9, 8 * kGB, 5, 10.45, 553.0, 7.0,
     "HBM2 stack at 2.4 Gb/s x 1024 bits (A100 40GB: 1555 GB/s over 5 stacks)"},
    {MemoryType::hbm2e, 410e9, 16 * kGB, 5, 10.45, 553.0, 7.0,
     "HBM2e stack at 3.2 Gb/s x 1024 bits (A100 80GB: 2039 GB/s over 5 stacks)"},
    {MemoryType::hbm3, 670e9, 16 * kGB, 5, 11.0, 600.0, 12.0,
     "HBM3 stack at 5.2 Gb/s x 1024 bits (H100 SXM: 3.35 TB/s over 5 stacks); price estimate"},
    {MemoryType::hbm3e, 800e9, 24 * kGB, 6, 11.0, 600.0, 15.0,
     "HBM3e stack at 6.25 Gb/s x 1024 bits (H200: 4.8 TB/s over 6 stacks); price estimate"},
    {MemoryType::gddr6, 80e9, 2 * kGB, 12, 2.2, 45.0, 3.0,
     "GDDR6 32-bit channel at 20 Gb/s, 16 Gb devices; PHY and price estimates"},
    {MemoryType::lpddr5, 68.3e9, 60 * kGB, 8, 2.4, 90.0, 3.0,
     "LPDDR5X 64-bit channel at 8533 MT/s; 480 GB over 8 channels as on NVIDIA Grace "
     "(512 GB/s); PHY and price estimates"},
    {MemoryType::ddr5, 51.2e9, 48 * kGB, 16, 2.9, 180.0, 2.4,
     "DDR5-6400 64-bit channel (2 x 1.45 mm^2 LLMCompass 32-bit PHY units), one 48 GB RDIMM "
     "per channel, 16 channels"},
}};
}  // namespace

const MemoryTechnology& memory_technology(MemoryType type) {
  for (const auto& t : kTechnologies) {
    if (t.type == type) return t;
  }
  return kTechnologies.front();
}

}  // namespace inferlab
