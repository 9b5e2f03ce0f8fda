#include "report/xy_chart_svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "report/svg_text.hpp"
#include "util/error.hpp"

namespace inferlab {

namespace {
constexpr double kWidth = 900, kHeight = 560, kLeft = 95, kRight = 220, kTop = 55, kBottom = 65;
const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                         "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

// A "nice" tick step (1, 2 or 5 times a power of ten) giving about `target` ticks.
double tick_step(double span, int target) {
  const double raw = span / target;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10.0 * power;
}
}  // namespace

std::string render_xy_chart_svg(const XyChart& chart) {
  double x_min = 1e300, x_max = -1e300, y_max = -1e300, y_min = 0.0;
  size_t points = 0;
  for (const auto& s : chart.series) {
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      x_min = std::min(x_min, s.x[i]);
      x_max = std::max(x_max, s.x[i]);
      y_min = std::min(y_min, s.y[i]);
      y_max = std::max(y_max, s.y[i]);
      ++points;
    }
  }
  if (points == 0) throw InputError("a chart needs at least one point");
  if (x_max <= x_min) x_max = x_min + 1.0;
  if (y_max <= y_min) y_max = y_min + 1.0;
  const double x_pad = 0.05 * (x_max - x_min);
  x_min -= x_pad;
  x_max += x_pad;
  y_max += 0.05 * (y_max - y_min);
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x - x_min) / (x_max - x_min) * plot_w; };
  auto py = [&](double y) { return kTop + plot_h - (y - y_min) / (y_max - y_min) * plot_h; };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n",
      kWidth, kHeight);
  svg += fmt::format("<text x=\"{}\" y=\"22\" font-size=\"16\" font-weight=\"bold\">{}</text>\n",
                     kLeft, svg_escape(chart.title));
  svg += fmt::format("<text x=\"{}\" y=\"40\" fill=\"#555\">{}</text>\n", kLeft,
                     svg_escape(chart.subtitle));
  const double xs = tick_step(x_max - x_min, 8), ys = tick_step(y_max - y_min, 6);
  for (double t = std::ceil(x_min / xs) * xs; t <= x_max + 1e-9 * xs; t += xs) {
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#eee\"/><text "
        "x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4:g}</text>\n",
        px(t), kTop, kTop + plot_h, kTop + plot_h + 16, t);
  }
  for (double t = std::ceil(y_min / ys) * ys; t <= y_max + 1e-9 * ys; t += ys) {
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#eee\"/><text "
        "x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5:g}</text>\n",
        kLeft, py(t), kLeft + plot_w, kLeft - 6, py(t) + 4, t);
  }
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n", kLeft,
      kTop, plot_w, plot_h);
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     kLeft + plot_w / 2, kHeight - 18, svg_escape(chart.x_label));
  svg += fmt::format(
      "<text x=\"18\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 18 "
      "{0})\">{1}</text>\n",
      kTop + plot_h / 2, svg_escape(chart.y_label));
  for (size_t k = 0; k < chart.series.size(); ++k) {
    const auto& s = chart.series[k];
    const char* color = kColors[k % std::size(kColors)];
    const size_t n = std::min(s.x.size(), s.y.size());
    if (s.lines && n > 1) {
      std::string path;
      for (size_t i = 0; i < n; ++i) {
        if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
        path += fmt::format("{}{:.1f},{:.1f} ", path.empty() ? "M" : "L", px(s.x[i]), py(s.y[i]));
      }
      svg += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", path,
                         color);
    }
    if (s.markers) {
      for (size_t i = 0; i < n; ++i) {
        if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
        svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"/>\n",
                           px(s.x[i]), py(s.y[i]), color);
        if (i < s.point_labels.size() && !s.point_labels[i].empty()) {
          svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\">{}</text>\n",
                             px(s.x[i]) + 6, py(s.y[i]) - 6, svg_escape(s.point_labels[i]));
        }
      }
    }
    const double ly = kTop + 10 + 20 * static_cast<double>(k);
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"4\" fill=\"{}\"/><text x=\"{}\" "
        "y=\"{}\">{}</text>\n",
        kLeft + plot_w + 14, ly, color, kLeft + plot_w + 34, ly + 6, svg_escape(s.label));
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace inferlab
