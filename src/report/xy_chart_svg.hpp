#pragma once
#include <string>
#include <vector>

namespace inferlab {

// A line or scatter chart with linear axes: Pareto fronts (explore), latency CDFs and KV-cache
// use over time (serve).
struct XySeries {
  std::string label;
  std::vector<double> x, y;
  bool lines = true;  // joined in x order as given
  bool markers = false;
  std::vector<std::string> point_labels;  // optional, one per point
};
struct XyChart {
  std::string title, subtitle, x_label, y_label;
  std::vector<XySeries> series;
};

// A standalone SVG document. InputError when no series has a point.
std::string render_xy_chart_svg(const XyChart& chart);

}  // namespace inferlab
