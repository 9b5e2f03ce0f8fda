#include "report/roofline_svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "report/svg_text.hpp"
#include "util/error.hpp"

namespace inferlab {

double ridge_point_flops_per_byte(double flops_per_s, double bytes_per_s) {
  return flops_per_s / bytes_per_s;
}

namespace {

constexpr double kWidth = 900, kHeight = 600, kLeft = 105, kRight = 230, kTop = 50, kBottom = 70;
const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                         "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

std::string si(double v, const char* unit) {
  const char* prefixes[] = {"", "K", "M", "G", "T", "P", "E"};
  int i = 0;
  while (v >= 1000.0 && i < 6) {
    v /= 1000.0;
    ++i;
  }
  return fmt::format("{:g} {}{}", std::round(v * 10) / 10, prefixes[i], unit);
}

}  // namespace

std::string render_roofline_svg(const RooflineChart& chart) {
  if (chart.compute.empty() || chart.memory.empty()) {
    throw InputError("a roofline needs at least one compute and one memory ceiling");
  }
  double peak = 0, slowest_bw = 1e300, fastest_bw = 0;
  for (const auto& c : chart.compute) peak = std::max(peak, c.value);
  for (const auto& m : chart.memory) {
    slowest_bw = std::min(slowest_bw, m.value);
    fastest_bw = std::max(fastest_bw, m.value);
  }
  // Axis ranges: intensity from well left of the fastest level's ridge to right of the
  // slowest's; performance from 1/10,000 of peak to twice peak, widened to fit the points.
  double x_min = std::pow(10, std::floor(std::log10(peak / fastest_bw / 1000)));
  double x_max = std::pow(10, std::ceil(std::log10(peak / slowest_bw * 30)));
  double y_max = std::pow(10, std::ceil(std::log10(peak * 2)));
  double y_min = y_max / 1e5;
  for (const auto& p : chart.points) {
    if (p.intensity_flops_per_byte > 0) {
      x_min = std::min(x_min, std::pow(10, std::floor(std::log10(p.intensity_flops_per_byte))));
      x_max = std::max(x_max, std::pow(10, std::ceil(std::log10(p.intensity_flops_per_byte))));
    }
    if (p.attained_flops_per_s > 0) {
      y_min = std::min(y_min, std::pow(10, std::floor(std::log10(p.attained_flops_per_s))));
    }
  }
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto X = [&](double x) {
    return kLeft +
           plot_w * (std::log10(x) - std::log10(x_min)) / (std::log10(x_max) - std::log10(x_min));
  };
  auto Y = [&](double y) {
    return kTop + plot_h * (1 - (std::log10(y) - std::log10(y_min)) /
                                    (std::log10(y_max) - std::log10(y_min)));
  };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n<text x=\"{}\" y=\"20\" font-size=\"14\">{}</text>\n"
      "<text x=\"{}\" y=\"38\" font-size=\"11\" fill=\"#555\">{}</text>\n",
      kWidth, kHeight, kLeft, svg_escape(chart.title), kLeft, svg_escape(chart.subtitle));
  // Labels nudged down until they clear the ones already placed.
  std::vector<double> used_y;
  auto free_y = [&](double x_px, double y) {
    bool moved = true;
    while (moved) {
      moved = false;
      for (double u : used_y) {
        if (std::fabs(u - y) < 12.5) {  // below the 13 px step: a moved label never re-matches
          y = u + 13;
          moved = true;
        }
      }
    }
    used_y.push_back(y);
    (void)x_px;
    return y;
  };
  svg += "<defs><clipPath id=\"plot\"><rect x=\"" + fmt::format("{}", kLeft) + "\" y=\"" +
         fmt::format("{}", kTop) + "\" width=\"" + fmt::format("{}", plot_w) + "\" height=\"" +
         fmt::format("{}", plot_h) + "\"/></clipPath></defs>\n";
  // Grid and axes: one line per decade.
  for (double x = x_min; x <= x_max * 1.001; x *= 10) {
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#ddd\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4:g}</text>\n",
        X(x), kTop, kTop + plot_h, kTop + plot_h + 18, x);
  }
  for (double y = y_min; y <= y_max * 1.001; y *= 10) {
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
        kLeft, Y(y), kLeft + plot_w, kLeft - 6, Y(y) + 4, si(y, "FLOP/s"));
  }
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" "
      "stroke=\"black\"/>\n",
      kLeft, kTop, plot_w, plot_h);
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">arithmetic intensity "
      "(FLOPs per byte)</text>\n",
      kLeft + plot_w / 2, kHeight - 20);
  svg += fmt::format(
      "<text transform=\"translate(16,{}) rotate(-90)\" text-anchor=\"middle\">"
      "attainable FLOP/s</text>\n",
      kTop + plot_h / 2);
  svg += "<g clip-path=\"url(#plot)\">\n";
  std::string outside;
  // Memory ceilings: bandwidth x intensity up to the highest compute ceiling.
  for (const auto& m : chart.memory) {
    double ridge = ridge_point_flops_per_byte(peak, m.value);
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
        "stroke=\"#444\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>\n",
        X(x_min), Y(m.value * x_min), X(ridge), Y(peak));
    double label_x = x_min * 3;
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#444\">{} {}</text>\n",
                       X(label_x) + 4, free_y(X(label_x), Y(m.value * label_x) - 6),
                       svg_escape(m.label), si(m.value, "B/s"));
  }
  // Compute ceilings: flat lines from their ridge with the fastest memory level.
  for (const auto& c : chart.compute) {
    double ridge = ridge_point_flops_per_byte(c.value, fastest_bw);
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
        "stroke=\"black\" stroke-width=\"2\"/>\n",
        X(ridge), Y(c.value), X(x_max), Y(c.value));
    // Outside the plot's clip region, right of the frame.
    outside +=
        fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{} {}</text>\n", X(x_max) + 6,
                    free_y(X(x_max), Y(c.value) + 4), svg_escape(c.label), si(c.value, "FLOP/s"));
  }
  // Points, one colour per group.
  std::vector<std::string> groups;
  for (const auto& p : chart.points) {
    if (std::find(groups.begin(), groups.end(), p.group) == groups.end()) groups.push_back(p.group);
  }
  for (const auto& p : chart.points) {
    if (p.intensity_flops_per_byte <= 0 || p.attained_flops_per_s <= 0) continue;
    size_t g = std::find(groups.begin(), groups.end(), p.group) - groups.begin();
    svg += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\" "
        "fill-opacity=\"0.8\"><title>{}: {:.3g} FLOP/B, {}</title></circle>\n",
        X(p.intensity_flops_per_byte), Y(p.attained_flops_per_s), kColors[g % 8],
        svg_escape(p.group + " " + p.label), p.intensity_flops_per_byte,
        si(p.attained_flops_per_s, "FLOP/s"));
  }
  svg += "</g>\n" + outside;
  // Legend.
  double ly = kTop + plot_h - 18.0 * groups.size();
  for (size_t g = 0; g < groups.size(); ++g, ly += 18) {
    svg += fmt::format(
        "<circle cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"{}\"/><text x=\"{}\" "
        "y=\"{}\">{}</text>\n",
        kWidth - kRight + 20, ly, kColors[g % 8], kWidth - kRight + 30, ly + 4,
        svg_escape(groups[g]));
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace inferlab
