#pragma once
#include <string>

#include "serve/capacity.hpp"

namespace inferlab::cli {

// --slo "ttft_p99=500,tpot_p99=50": milliseconds, or with a unit ("0.5s", "500ms"); both
// targets are needed.
CapacitySlo parse_capacity_slo(const std::string& text);

}  // namespace inferlab::cli
