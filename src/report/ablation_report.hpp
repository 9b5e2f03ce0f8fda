#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace inferlab {

// `bench --ablation`: one line per step of the staircase (measured and predicted prefill and
// decode step, tensor FLOP rate as a share of the bf16 peak, decode bandwidth as a share of the
// probe's HBM read bandwidth) from the command's JSON.
std::string ablation_text(const nlohmann::json& json);

}  // namespace inferlab
