#include "model/moe_routing.hpp"

#include <algorithm>
#include <cmath>

#include "model/step_graph.hpp"

namespace inferlab {

double sequence_experts_reached(const ModelConfig& model, int64_t tokens) {
  const auto& points = model.moe_sequence_reached;
  if (points.empty()) {
    return expected_active_experts(model.num_experts, model.experts_per_token, tokens);
  }
  const double k = static_cast<double>(model.experts_per_token);
  if (tokens <= 1) return k;
  // Below the first point: from (1 token, k experts) to it.
  std::pair<double, double> below{1.0, k};
  for (const auto& [at, reached] : points) {
    if (tokens <= at) {
      const double span = std::log(static_cast<double>(at)) - std::log(below.first);
      const double f =
          span > 0.0 ? (std::log(static_cast<double>(tokens)) - std::log(below.first)) / span : 1.0;
      return below.second + f * (reached - below.second);
    }
    below = {static_cast<double>(at), reached};
  }
  return points.back().second;
}

double expected_active_experts(const ModelConfig& model, int64_t sequences,
                               int64_t tokens_per_sequence) {
  const double e = static_cast<double>(model.num_experts);
  const double one = std::min(e, sequence_experts_reached(model, tokens_per_sequence));
  return e * (1.0 - std::pow(1.0 - one / e, static_cast<double>(std::max<int64_t>(1, sequences))));
}

double expected_active_experts(const ModelConfig& model,
                               std::span<const int64_t> tokens_per_sequence) {
  const double e = static_cast<double>(model.num_experts);
  double missed = 1.0;  // the chance that no sequence reaches a given expert
  for (int64_t tokens : tokens_per_sequence) {
    missed *= 1.0 - std::min(e, sequence_experts_reached(model, tokens)) / e;
  }
  return e * (1.0 - missed);
}

}  // namespace inferlab
