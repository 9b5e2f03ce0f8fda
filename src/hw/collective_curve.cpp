#include "hw/collective_curve.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "util/error.hpp"
#include "util/json_file.hpp"

namespace inferlab {

double CollectiveCurve::transfer_s(double bytes) const {
  if (points.size() < 2 || bytes <= points.front().first) return 0.0;
  const double floor_s = points.front().second;
  auto upper = std::lower_bound(points.begin(), points.end(), bytes,
                                [](const auto& point, double b) { return point.first < b; });
  if (upper == points.end()) upper = points.end() - 1;  // past the largest: the last segment
  const auto lower = upper - 1;
  const double slope = (upper->second - lower->second) / (upper->first - lower->first);
  return std::max(0.0, lower->second + slope * (bytes - lower->first) - floor_s);
}

double CollectiveCurve::call_s(double bytes) const {
  if (points.empty()) return 0.0;
  if (points.size() < 2 || bytes <= points.front().first) return points.front().second;
  auto upper = std::lower_bound(points.begin(), points.end(), bytes,
                                [](const auto& point, double b) { return point.first < b; });
  if (upper == points.end()) upper = points.end() - 1;
  const auto lower = upper - 1;
  const double slope = (upper->second - lower->second) / (upper->first - lower->first);
  return lower->second + slope * (bytes - lower->first);
}

double eager_call_s(const CollectiveCurve& graph, const CollectiveCurve* eager, double bytes) {
  const double in_graph_s = graph.call_s(bytes);
  if (eager == nullptr) return in_graph_s;
  // Eager launch's addition per call where the sample amortised its own launch and
  // synchronisation over several calls.
  std::vector<std::pair<double, double>> added;
  for (size_t i = 0; i < eager->points.size(); ++i) {
    const int calls = i < eager->calls_per_sample.size() ? eager->calls_per_sample[i] : 0;
    if (calls == 1) continue;
    const double b = eager->points[i].first;
    added.emplace_back(b, std::max(0.0, eager->points[i].second - graph.call_s(b)));
  }
  if (added.empty()) return in_graph_s;
  if (bytes <= added.front().first) return in_graph_s + added.front().second;
  if (bytes >= added.back().first) return in_graph_s + added.back().second;
  const auto upper = std::lower_bound(added.begin(), added.end(), bytes,
                                      [](const auto& point, double b) { return point.first < b; });
  const auto lower = upper - 1;
  const double share = (bytes - lower->first) / (upper->first - lower->first);
  return in_graph_s + lower->second + share * (upper->second - lower->second);
}

const CollectiveCurve* CollectiveCurves::find(Collective kind, int devices) const {
  for (const auto& curve : curves) {
    if (curve.kind == kind && curve.devices == devices) return &curve;
  }
  return nullptr;
}

namespace {

// The rows of `rows` that `keep` accepts, as curves by (collective, devices).
template <typename Keep>
CollectiveCurves curves_of(const nlohmann::json& rows, const std::string& context, Keep keep) {
  CollectiveCurves result;
  std::map<std::pair<Collective, int>, CollectiveCurve> by_key;
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string row_ctx = fmt::format("{} points[{}]", context, i);
    const auto& row = rows[i];
    if (!row.is_object()) throw InputError(row_ctx + ": must be an object");
    if (!keep(row, row_ctx)) continue;
    const std::string name = require_string(row, "collective", row_ctx);
    Collective kind;
    if (name == "all_reduce") {
      kind = Collective::all_reduce;
    } else if (name == "all_gather") {
      kind = Collective::all_gather;
    } else {
      throw InputError(row_ctx + ": unknown collective '" + name + "'; known: all_reduce, " +
                       "all_gather");
    }
    const int devices = static_cast<int>(require_count(row, "devices", row_ctx, 2, 65536));
    const double bytes = static_cast<double>(require_count(row, "bytes", row_ctx, 1, 1LL << 50));
    const double seconds = require_number(row, "median_s", row_ctx);
    if (!(seconds > 0.0 && seconds < 1e3)) {
      throw InputError(row_ctx + ": median_s must be in (0, 1000) seconds");
    }
    // Back-to-back calls per sample (the in-stream curves' "calls_per_sample"; 0: not given).
    const int calls =
        static_cast<int>(optional_count(row, "calls_per_sample", 0, row_ctx, 1, 1 << 20));
    auto& curve = by_key[{kind, devices}];
    curve.kind = kind;
    curve.devices = devices;
    curve.points.emplace_back(bytes, seconds);
    curve.calls_per_sample.push_back(calls);
  }
  for (auto& entry : by_key) {
    // A named reference, not a structured binding: clang 14 (CI's sanitizer build) cannot capture
    // a binding in the lambda below.
    auto& curve = entry.second;
    std::vector<size_t> order(curve.points.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    const auto& sorted_points = curve.points;
    std::sort(order.begin(), order.end(),
              [&sorted_points](size_t a, size_t b) { return sorted_points[a] < sorted_points[b]; });
    std::vector<std::pair<double, double>> points;
    std::vector<int> calls;
    for (size_t i : order) {
      points.push_back(curve.points[i]);
      calls.push_back(curve.calls_per_sample[i]);
    }
    curve.points = std::move(points);
    curve.calls_per_sample = std::move(calls);
    for (size_t i = 1; i < curve.points.size(); ++i) {
      if (curve.points[i].first == curve.points[i - 1].first) {
        throw InputError(fmt::format("{}: {} bytes measured twice for one collective", context,
                                     curve.points[i].first));
      }
    }
    // A larger message never costs less: a dip in the medians (noise) would otherwise make the
    // slope negative and the extrapolation past the largest size fall towards zero.
    for (size_t i = 1; i < curve.points.size(); ++i) {
      curve.points[i].second = std::max(curve.points[i].second, curve.points[i - 1].second);
    }
    if (curve.points.size() < 2) {
      throw InputError(context + ": a collective's curve needs at least two message sizes");
    }
    result.curves.push_back(std::move(curve));
  }
  return result;
}

const nlohmann::json& points_of(const nlohmann::json& section, const std::string& context) {
  static const nlohmann::json none = nlohmann::json::array();
  if (!section.is_object() || !section.contains("points")) return none;
  const auto& rows = section.at("points");
  if (!rows.is_array()) throw InputError(context + ": 'points' must be an array");
  return rows;
}

}  // namespace

CollectiveCurves parse_collective_curves(const nlohmann::json& interconnect,
                                         const std::string& context) {
  return curves_of(points_of(interconnect, context), context,
                   [](const nlohmann::json&, const std::string&) { return true; });
}

InStreamCollectives parse_in_stream_collectives(const nlohmann::json& collectives,
                                                const std::string& context) {
  const nlohmann::json& rows = points_of(collectives, context);
  auto select = [&](const char* library, const char* mode) {
    return curves_of(rows, context, [&](const nlohmann::json& row, const std::string& row_ctx) {
      const std::string lib = require_string(row, "library", row_ctx);
      const std::string how = require_string(row, "mode", row_ctx);
      if (lib != "nccl" && lib != "one_shot" && lib != "two_shot") {
        throw InputError(row_ctx + ": unknown library '" + lib +
                         "'; known: nccl, one_shot, two_shot");
      }
      if (how != "eager" && how != "graph") {
        throw InputError(row_ctx + ": unknown mode '" + how + "'; known: eager, graph");
      }
      return lib == library && how == mode;
    });
  };
  return {select("nccl", "graph"),     select("nccl", "eager"),     select("one_shot", "graph"),
          select("one_shot", "eager"), select("two_shot", "graph"), select("two_shot", "eager")};
}

}  // namespace inferlab
