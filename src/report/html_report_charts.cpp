#include "report/html_report_charts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>

#include "report/svg_text.hpp"
#include "util/error.hpp"

namespace inferlab {

namespace {
const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
                          "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#1f77b4", "#8cd17d",
                          "#d37295", "#a0cbe8", "#ffbe7d", "#86bcb6"};

// Sans-serif at about 0.55 em a character: a little wider than most such fonts' average.
double text_px(const std::string& text, double font_px) {
  return 0.55 * font_px * static_cast<double>(text.size());
}
// Dark text on light fills, white text (with a soft outline) on the others.
std::string text_style(const std::string& fill) {
  if (fill.size() == 7 && fill[0] == '#') {
    const long rgb = std::strtol(fill.c_str() + 1, nullptr, 16);
    const double luma =
        0.2126 * ((rgb >> 16) & 255) + 0.7152 * ((rgb >> 8) & 255) + 0.0722 * (rgb & 255);
    if (luma > 170) return "fill=\"#333\"";
  }
  return "fill=\"#fff\" style=\"paint-order:stroke\" stroke=\"rgba(0,0,0,0.25)\" "
         "stroke-width=\"2\"";
}
}  // namespace

std::string palette_color(size_t index) {
  return kPalette[index % std::size(kPalette)];
}

std::string render_stacked_bars_svg(const std::vector<StackedBar>& bars, double width_px) {
  constexpr double kLabelW = 150, kRight = 16, kBarH = 34, kGap = 22, kTop = 8;
  const double kWidth = std::max(width_px, kLabelW + 200);
  const double bar_w = kWidth - kLabelW - kRight;
  std::vector<std::string> names;
  std::vector<std::string> colors;
  for (const auto& b : bars) {
    for (const auto& p : b.parts) {
      if (std::find(names.begin(), names.end(), p.name) == names.end()) {
        names.push_back(p.name);
        colors.push_back(p.color.empty() ? palette_color(colors.size()) : p.color);
      }
    }
  }
  auto color_of = [&](const std::string& name) {
    return colors[std::find(names.begin(), names.end(), name) - names.begin()];
  };
  std::string body;
  double y = kTop;
  for (const auto& b : bars) {
    double total = 0;
    for (const auto& p : b.parts) total += std::max(0.0, p.value);
    body += fmt::format(
        "<text x=\"0\" y=\"{:.1f}\" font-size=\"13\" font-weight=\"bold\">{}</text>"
        "<text x=\"0\" y=\"{:.1f}\" font-size=\"11\" fill=\"#5b6675\">{}</text>\n",
        y + 15, svg_escape(b.label), y + 29, svg_escape(b.note));
    double x = kLabelW;
    for (const auto& p : b.parts) {
      if (total <= 0 || p.value <= 0) continue;
      const double w = bar_w * p.value / total;
      body += fmt::format(
          "<rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\" "
          "stroke=\"#fff\" stroke-width=\"0.8\"><title>{}</title></rect>\n",
          x, y, w, kBarH, color_of(p.name), svg_escape(p.name + ": " + p.text));
      // The name when it fits, else only the figure, else nothing (the legend names it).
      for (const std::string& t : {p.name + " " + p.text, p.name, std::string()}) {
        if (t.empty() || text_px(t, 11) + 8 > w) continue;
        body += fmt::format(
            "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"middle\" "
            "{}>{}</text>\n",
            x + w / 2, y + kBarH / 2 + 4, text_style(color_of(p.name)), svg_escape(t));
        break;
      }
      x += w;
    }
    y += kBarH + kGap;
  }
  // Legend: swatches in rows.
  double lx = kLabelW, ly = y + 2;
  for (size_t i = 0; i < names.size(); ++i) {
    const double w = 22 + text_px(names[i], 11) + 14;
    if (lx + w > kWidth) {
      lx = kLabelW;
      ly += 18;
    }
    body += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"12\" height=\"12\" rx=\"2\" fill=\"{}\"/>"
        "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\">{}</text>\n",
        lx, ly, colors[i], lx + 17, ly + 10, svg_escape(names[i]));
    lx += w;
  }
  const double height = ly + 20;
  return fmt::format(
             "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" "
             "height=\"{1}\" font-family=\"sans-serif\">\n",
             kWidth, height) +
         body + "</svg>\n";
}

std::string render_parity_svg(const ParityChart& chart) {
  constexpr double kWidth = 520, kHeight = 470, kLeft = 70, kRight = 18, kTop = 52, kBottom = 52;
  double lo = 1e300, hi = 0;
  for (const auto& p : chart.points) {
    if (!(p.measured > 0) || !(p.predicted > 0)) continue;
    lo = std::min({lo, p.measured, p.predicted});
    hi = std::max({hi, p.measured, p.predicted});
  }
  if (hi <= 0) throw InputError("a parity chart needs at least one positive point");
  // Decades around the data; at least one decade.
  double d_lo = std::floor(std::log10(lo)), d_hi = std::ceil(std::log10(hi));
  if (d_hi <= d_lo) d_hi = d_lo + 1;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto X = [&](double v) { return kLeft + plot_w * (std::log10(v) - d_lo) / (d_hi - d_lo); };
  auto Y = [&](double v) { return kTop + plot_h * (1 - (std::log10(v) - d_lo) / (d_hi - d_lo)); };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" "
      "height=\"{1}\" font-family=\"sans-serif\" font-size=\"11\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{3}</text>\n"
      "<text x=\"{2}\" y=\"37\" fill=\"#555\">{4}</text>\n"
      "<defs><clipPath id=\"parity-{5}\"><rect x=\"{2}\" y=\"{6}\" width=\"{7}\" "
      "height=\"{8}\"/></clipPath></defs>\n",
      kWidth, kHeight, kLeft, svg_escape(chart.title), svg_escape(chart.subtitle),
      std::hash<std::string>{}(chart.title) % 1000000, kTop, plot_w, plot_h);
  const std::string clip =
      fmt::format("parity-{}", std::hash<std::string>{}(chart.title) % 1000000);
  // Grid: decades, with 2x and 5x minor lines.
  for (double d = d_lo; d <= d_hi + 1e-9; d += 1) {
    const double v = std::pow(10, d);
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#ddd\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4:g}</text>\n"
        "<line x1=\"{5}\" y1=\"{6:.1f}\" x2=\"{7}\" y2=\"{6:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{8}\" y=\"{9:.1f}\" text-anchor=\"end\">{4:g}</text>\n",
        X(v), kTop, kTop + plot_h, kTop + plot_h + 15, v, kLeft, Y(v), kLeft + plot_w, kLeft - 5,
        Y(v) + 4);
    for (double m : {2.0, 5.0}) {
      if (d + std::log10(m) >= d_hi) break;
      svg += fmt::format(
          "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#f2f2f2\"/>"
          "<line x1=\"{3}\" y1=\"{4:.1f}\" x2=\"{5}\" y2=\"{4:.1f}\" stroke=\"#f2f2f2\"/>\n",
          X(m * v), kTop, kTop + plot_h, kLeft, Y(m * v), kLeft + plot_w);
    }
  }
  const double a = std::pow(10, d_lo), b = std::pow(10, d_hi);
  svg += fmt::format("<g clip-path=\"url(#{})\">\n", clip);
  // The +-10% band and y = x.
  svg += fmt::format(
      "<polygon points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\" "
      "fill=\"#2ca02c\" fill-opacity=\"0.08\"/>\n",
      X(a), Y(a * 1.1), X(b), Y(b * 1.1), X(b), Y(b * 0.9), X(a), Y(a * 0.9));
  svg += fmt::format(
      "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#2ca02c\" "
      "stroke-width=\"1.2\"/>\n",
      X(a), Y(a), X(b), Y(b));
  for (const auto& p : chart.points) {
    if (!(p.measured > 0) || !(p.predicted > 0)) continue;
    const double error = (p.predicted - p.measured) / p.measured;
    const char* color = std::fabs(error) <= 0.1 ? "#1f77b4" : "#d62728";
    svg += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.2\" fill=\"{}\" fill-opacity=\"0.7\">"
        "<title>{}: measured {:.4g} {}, predicted {:.4g} {} ({:+.1f}%)</title></circle>\n",
        X(p.measured), Y(p.predicted), color, svg_escape(p.label), p.measured, chart.unit,
        p.predicted, chart.unit, 100 * error);
  }
  svg += "</g>\n";
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n"
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">measured ({})</text>\n"
      "<text transform=\"translate(16,{}) rotate(-90)\" text-anchor=\"middle\">predicted "
      "({})</text>\n"
      "<text x=\"{}\" y=\"{}\" fill=\"#2ca02c\" text-anchor=\"end\">y = x, band \u00b110%</text>\n",
      kLeft, kTop, plot_w, plot_h, kLeft + plot_w / 2, kHeight - 14, svg_escape(chart.unit),
      kTop + plot_h / 2, svg_escape(chart.unit), kLeft + plot_w - 6, kTop + plot_h - 8);
  svg += "</svg>\n";
  return svg;
}

}  // namespace inferlab
