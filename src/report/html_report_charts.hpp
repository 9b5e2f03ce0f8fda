#pragma once
#include <string>
#include <vector>

namespace inferlab {

// Charts drawn for the HTML report (inline SVG, scaled by the page).

// Horizontal stacked bars, each drawn to the full width (parts as shares of the bar's total).
// A part's colour follows its name, so one name has one colour in every bar; a legend lists
// the names under the bars.
struct BarPart {
  std::string name;
  double value = 0.0;
  std::string text;   // shown inside the segment when it is wide enough, and on hover
  std::string color;  // optional; else from the palette by name
};
struct StackedBar {
  std::string label, note;  // left of the bar; note under the label (e.g. "12.3 ms")
  std::vector<BarPart> parts;
};
// `width_px`: the drawing's width (the page scales it to its column).
std::string render_stacked_bars_svg(const std::vector<StackedBar>& bars, double width_px = 1100);

// Predicted against measured on log-log axes, with the y = x line and a +-10% band.
struct ParityPoint {
  double measured = 0.0, predicted = 0.0;
  std::string label;  // hover text
};
struct ParityChart {
  std::string title, subtitle, unit;  // unit of both axes, e.g. "ms"
  std::vector<ParityPoint> points;
};
std::string render_parity_svg(const ParityChart& chart);

// A colour of the shared palette for a name (stable across calls and bars).
std::string palette_color(size_t index);

}  // namespace inferlab
