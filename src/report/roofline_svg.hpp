#pragma once
#include <string>
#include <vector>

namespace inferlab {

// A hierarchical roofline: one horizontal ceiling per compute path, one slanted ceiling per
// memory level, and points placed at (arithmetic intensity, attained FLOP/s).
struct RooflineCeiling {
  std::string label;
  double value = 0.0;  // FLOP/s for compute, bytes/s for memory
};
struct RooflinePoint {
  std::string label;
  double intensity_flops_per_byte = 0.0;
  double attained_flops_per_s = 0.0;
  std::string group;    // e.g. "prefill" or "decode": one colour each
  double weight = 0.0;  // e.g. share of its step's time: heavier points are labelled first
};
struct RooflineChart {
  std::string title, subtitle;
  std::vector<RooflineCeiling> compute, memory;
  std::vector<RooflinePoint> points;
};

// A standalone SVG document (log-log axes, legend, labels). Every point is named: by a label
// beside it where one fits without overlapping another label or point, else by a number
// listed under the plot. Points of one group that coincide on the page share one label. The
// title and subtitle wrap to the frame's width. Throws InputError when there is nothing to
// draw.
std::string render_roofline_svg(const RooflineChart& chart);

// Ridge point of a compute ceiling over a memory ceiling: FLOPs per byte where they meet.
double ridge_point_flops_per_byte(double flops_per_s, double bytes_per_s);

}  // namespace inferlab
