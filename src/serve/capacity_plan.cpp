#include "serve/capacity_plan.hpp"

#include <algorithm>

#include "cost/cost_loader.hpp"
#include "model/step_graph.hpp"
#include "predict/framework.hpp"
#include "serve/serving_setup.hpp"
#include "util/field_error.hpp"

namespace inferlab {

std::vector<CapacityOutcome> plan_capacity(const CapacityPlanRequest& request) {
  for (const auto& [name, price] : request.usd_per_device_hour) {
    if (std::find(request.hardware.begin(), request.hardware.end(), name) ==
        request.hardware.end()) {
      throw FieldError("`usd_per_device_hour` names '" + name + "', which is not in `hardware`");
    }
  }
  const HostOverhead host = load_host_overhead();
  std::vector<CapacityOutcome> outcomes;
  for (const auto& hw_name : request.hardware) {
    CostRequest cost_request;
    cost_request.hardware = hw_name;
    cost_request.profile = request.profile;
    cost_request.method = request.cost;
    const LoadedCost hw = load_cost(cost_request);
    for (int tp : request.tp_degrees) {
      CapacityOutcome c;
      c.hardware = hw_name;
      c.tp = tp;
      if (auto it = request.usd_per_device_hour.find(hw_name);
          it != request.usd_per_device_hour.end()) {
        c.usd_per_device_hour = it->second;
      }
      try {
        shard_dims(request.model, tp);
      } catch (const InputError& e) {
        c.note = e.what();  // this degree does not shard the model: not a configuration
        outcomes.push_back(c);
        continue;
      }
      PredictOptions o = request.options;
      o.tp = tp;
      SchedulerConfig e = request.scheduler;
      const KvBudget kv = size_kv_cache(e, request.model, hw.spec, o);
      c.kv_blocks = kv.blocks;
      c.fits = kv.fits();
      if (!c.fits) {
        c.note = "weights and activations do not fit";
        outcomes.push_back(c);
        continue;
      }
      const PredictedIterationCost cost(request.model, hw.spec, *hw.cost, o, host,
                                        request.draft_model);
      c.search = find_max_rate(request.unit_rate_requests, e, cost, request.slo);
      c.usd_per_million_tokens =
          cost_per_million_tokens(c.usd_per_device_hour, tp, c.search.at_max.output_tokens_per_s);
      if (c.search.max_rate_per_s == 0.0) c.note = "misses the SLO at any rate";
      outcomes.push_back(c);
    }
  }
  auto rank = [](const CapacityOutcome& c) {
    if (!(c.search.max_rate_per_s > 0.0)) return 2;
    return std::isfinite(c.usd_per_million_tokens) ? 0 : 1;
  };
  std::stable_sort(outcomes.begin(), outcomes.end(), [&](const auto& x, const auto& y) {
    if (rank(x) != rank(y)) return rank(x) < rank(y);
    if (rank(x) == 0) return x.usd_per_million_tokens < y.usd_per_million_tokens;
    return x.search.max_rate_per_s > y.search.max_rate_per_s;
  });
  return outcomes;
}

void normalise_to_unit_rate(std::vector<ServeRequest>& requests) {
  if (requests.size() < 2) {
    for (auto& r : requests) r.arrival_s = 0.0;
    return;
  }
  double first = requests.front().arrival_s, last = first;
  for (const auto& r : requests) {
    first = std::min(first, r.arrival_s);
    last = std::max(last, r.arrival_s);
  }
  const double span = last - first;
  const double n = static_cast<double>(requests.size() - 1);
  for (auto& r : requests) r.arrival_s = span > 0.0 ? (r.arrival_s - first) / span * n : 0.0;
}

}  // namespace inferlab
