#include "explore/design_space.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string_view>

#include "area/area_model.hpp"
#include "area/die_cost.hpp"
#include "cost/tilesim/tilesim_cost.hpp"
#include "hw/hardware_spec.hpp"
#include "predict/simulation.hpp"
#include "util/field_error.hpp"
#include "util/text.hpp"

namespace inferlab {

namespace {
double parse_value(const std::string& key, const std::string& value) {
  if (key == "memory") return 0.0;  // a technology name, not a number
  const auto v = parse_number(value);
  if (!v) throw FieldError("`axes` " + key + "=" + value + ": not a number");
  return *v;
}

// Runs one design: the step on the template, and its cost.
DesignPoint evaluate(const HardwareTemplate& hw, const ExploreRequest& request) {
  DesignPoint point;
  point.name = hw.name;
  const AreaEstimate area = estimate_area(hw);
  const DeviceCost cost = device_cost(hw, area);
  const int devices = request.options.tp * request.pp;
  point.die_area_mm2 = area.die_area_mm2;
  point.device_cost_usd = cost.total_cost_usd;
  point.system_cost_usd = cost.total_cost_usd * devices;

  const TileSimCostModel tilesim(hw, 1);
  const HardwareSpec spec = spec_of_template(hw);
  const DesignWorkload& w = request.workload;
  auto shape_for = [&](int64_t batch) {
    return w.phase == Phase::prefill ? StepShape{Phase::prefill, batch, w.tokens, w.tokens}
                                     : StepShape{Phase::decode, batch, 1, w.context};
  };
  int64_t batch = w.batch;
  if (batch == 0) {
    // Memory decides: KV grows linearly with the batch, so one probe at batch 1 gives the limit.
    PredictOptions o = request.options;
    o.batch = 1;
    const SimulationResult one =
        simulate_step(tilesim, spec, request.model, shape_for(1), o, request.pp);
    const double room =
        o.gpu_memory_utilization * one.capacity_bytes - one.weights_per_device_bytes;
    batch = room > 0.0 ? static_cast<int64_t>(std::floor(room / one.kv_per_device_bytes)) : 0;
    batch = std::min(batch, w.max_batch);
  }
  if (batch < 1) return point;  // not even one sequence fits: no throughput
  PredictOptions o = request.options;
  o.batch = batch;
  const SimulationResult r =
      simulate_step(tilesim, spec, request.model, shape_for(batch), o, request.pp);
  point.fits = r.fits;
  point.batch = batch;
  point.step_s = r.time_s;
  if (r.fits) {
    const double tokens = static_cast<double>(batch) * (w.phase == Phase::prefill ? w.tokens : 1);
    point.tokens_per_s = tokens / r.time_s;
    point.tokens_per_s_per_kusd = point.tokens_per_s / (point.system_cost_usd / 1000.0);
  }
  return point;
}
}  // namespace

std::vector<DesignPoint> explore_designs(const ExploreRequest& request) {
  const HardwareTemplate base = load_hardware_template(request.template_name);
  int64_t combinations = 1;
  for (const auto& axis : request.axes) {
    combinations *= static_cast<int64_t>(axis.values.size());
    if (combinations > request.max_designs) {
      throw FieldError(
          fmt::format("`axes` gives more than {} designs; narrow the axes", request.max_designs));
    }
  }
  std::vector<DesignPoint> points;
  std::vector<size_t> index(request.axes.size(), 0);
  for (int64_t n = 0; n < combinations; ++n) {
    HardwareTemplate hw = base;
    std::map<std::string, std::string> settings;
    for (size_t a = 0; a < request.axes.size(); ++a) {
      const auto& axis = request.axes[a];
      const std::string& value = axis.values[index[a]];
      hw = vary_template(hw, axis.key, parse_value(axis.key, value), value);
      settings[axis.key] = value;
    }
    DesignPoint point = evaluate(hw, request);
    point.settings = std::move(settings);
    points.push_back(std::move(point));
    // Odometer over the axes, the last one fastest.
    for (size_t a = request.axes.size(); a-- > 0;) {
      if (++index[a] < request.axes[a].values.size()) break;
      index[a] = 0;
    }
  }
  mark_pareto_front(points);
  return points;
}

void mark_pareto_front(std::vector<DesignPoint>& points) {
  for (auto& p : points) {
    p.pareto = p.tokens_per_s > 0.0;
    for (const auto& q : points) {
      if (&p == &q || !(q.tokens_per_s > 0.0)) continue;
      const bool no_worse =
          q.system_cost_usd <= p.system_cost_usd && q.tokens_per_s >= p.tokens_per_s;
      const bool better = q.system_cost_usd < p.system_cost_usd || q.tokens_per_s > p.tokens_per_s;
      if (no_worse && better) {
        p.pareto = false;
        break;
      }
    }
  }
}

}  // namespace inferlab
