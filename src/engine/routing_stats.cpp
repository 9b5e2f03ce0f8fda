#include "engine/routing_stats.hpp"

#include <algorithm>
#include <functional>
#include <stdexcept>

namespace inferlab::engine {

void RoutingStats::add_layer(std::span<const int32_t> expert_ids, int64_t tokens,
                             int64_t num_experts) {
  if (num_experts < 1 || tokens < 0) throw std::invalid_argument("RoutingStats: bad sizes");
  if (!empty() &&
      (static_cast<int64_t>(sorted_loads_sum.size()) != num_experts || tokens != this->tokens)) {
    throw std::invalid_argument("RoutingStats: a layer of another shape than the ones before");
  }
  std::vector<int64_t> loads(static_cast<size_t>(num_experts), 0);
  for (int32_t e : expert_ids) {
    if (e < 0 || e >= num_experts) throw std::invalid_argument("RoutingStats: expert id outside");
    ++loads[static_cast<size_t>(e)];
  }
  std::sort(loads.begin(), loads.end(), std::greater<>());
  if (empty()) {
    sorted_loads_sum.assign(loads.size(), 0);
    this->tokens = tokens;
  }
  for (size_t e = 0; e < loads.size(); ++e) sorted_loads_sum[e] += loads[e];
  experts_reached_sum += std::count_if(loads.begin(), loads.end(), [](int64_t n) { return n > 0; });
  max_rows_sum += loads.front();
  ++layers;
}

double RoutingStats::experts_reached_mean() const {
  return empty() ? 0.0 : static_cast<double>(experts_reached_sum) / static_cast<double>(layers);
}

double RoutingStats::max_rows_mean() const {
  return empty() ? 0.0 : static_cast<double>(max_rows_sum) / static_cast<double>(layers);
}

}  // namespace inferlab::engine
