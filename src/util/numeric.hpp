#pragma once
#include <cmath>

namespace inferlab {

// ceil(a / b) for counts kept as doubles (tiles, waves, blocks).
inline double ceil_div(double a, double b) {
  return std::ceil(a / b);
}

}  // namespace inferlab
