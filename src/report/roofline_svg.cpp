#include "report/roofline_svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string_view>

#include "report/svg_text.hpp"
#include "util/error.hpp"

namespace inferlab {

double ridge_point_flops_per_byte(double flops_per_s, double bytes_per_s) {
  return flops_per_s / bytes_per_s;
}

namespace {

constexpr double kWidth = 900, kLeft = 105, kRight = 230, kPlotHeight = 480, kBottom = 62;
constexpr double kTitlePx = 15, kSubtitlePx = 11, kPointLabelPx = 10;
// A white outline under text drawn over lines and points.
constexpr const char* kHalo =
    " stroke=\"white\" stroke-width=\"3\" stroke-linejoin=\"round\" paint-order=\"stroke\"";
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

// Width of a text run in sans-serif, from its length: 0.6 em a character is wider than the
// average of common sans-serif fonts, so an estimate errs on the side of room.
double text_px(const std::string& text, double font_px) {
  return 0.6 * font_px * static_cast<double>(text.size());
}
// Point labels (regular weight, mostly lower case and underscores) run narrower.
double label_px(const std::string& text) {
  return 0.55 * kPointLabelPx * static_cast<double>(text.size());
}

// Words broken into lines no wider than max_px; a word longer than a line is cut.
std::vector<std::string> wrap_text(const std::string& text, double max_px, double font_px) {
  const size_t per_line = std::max<size_t>(8, static_cast<size_t>(max_px / (0.6 * font_px)));
  std::vector<std::string> lines;
  std::string line;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(' ', at);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(at, end - at);
    at = end + 1;
    while (word.size() > per_line) {
      if (!line.empty()) lines.push_back(line), line.clear();
      lines.push_back(word.substr(0, per_line));
      word = word.substr(per_line);
    }
    if (!line.empty() && line.size() + 1 + word.size() > per_line) {
      lines.push_back(line);
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

struct Box {
  double x0, y0, x1, y1;
  bool overlaps(const Box& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
};

// A mark on the page: one or more points of one group that fall on the same spot.
struct Mark {
  double x, y, weight;
  size_t group;
  std::vector<std::string> labels;
  std::string title;  // hover text
};

// Places a text of width w (font kPointLabelPx) near (x, y), clear of `taken` and inside
// `frame`. Returns the text's anchor point and whether a leader line is needed.
struct Placement {
  bool placed = false;
  double text_x = 0, text_y = 0;
  const char* anchor = "start";
  bool leader = false;
  Box box{};
};
Placement place_label(double x, double y, double w, const std::vector<Box>& taken,
                      const Box& frame) {
  const double h = kPointLabelPx + 1;
  // Right, left, above, below, then the diagonals; then the same farther out (with a leader
  // line). The anchor matches the side, so the text sits next to the point whatever its
  // real width.
  struct Spot {
    double x, y;
    const char* anchor;
  };
  for (double r : {1.0, 2.2, 3.6}) {
    const double d = 7 * r, e = d * 0.8;
    const Spot spots[] = {{x + d, y + 3.5, "start"}, {x - d, y + 3.5, "end"},
                          {x, y - d, "middle"},      {x, y + d + h - 2, "middle"},
                          {x + e, y - e, "start"},   {x + e, y + e + h - 2, "start"},
                          {x - e, y - e, "end"},     {x - e, y + e + h - 2, "end"}};
    for (const Spot& s : spots) {
      const double left = std::string_view(s.anchor) == "start" ? s.x
                          : std::string_view(s.anchor) == "end" ? s.x - w
                                                                : s.x - w / 2;
      Box b{left - 1, s.y - h + 2, left + w + 1, s.y + 3};
      if (b.x0 < frame.x0 || b.x1 > frame.x1 || b.y0 < frame.y0 || b.y1 > frame.y1) continue;
      if (std::any_of(taken.begin(), taken.end(), [&](const Box& t) { return t.overlaps(b); })) {
        continue;
      }
      return {true, s.x, s.y, s.anchor, r > 1.0, b};
    }
  }
  return {};
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
  // Title and subtitle wrap to the frame; the plot starts below them.
  const double text_w = kWidth - 2 * 12;
  const auto title_lines = wrap_text(chart.title, text_w, kTitlePx);
  const auto subtitle_lines = wrap_text(chart.subtitle, text_w, kSubtitlePx);
  double header = 8;
  std::string header_svg;
  for (const auto& line : title_lines) {
    header += kTitlePx + 4;
    header_svg +=
        fmt::format("<text x=\"12\" y=\"{}\" font-size=\"{}\" font-weight=\"bold\">{}</text>\n",
                    header, kTitlePx, svg_escape(line));
  }
  for (const auto& line : subtitle_lines) {
    header += kSubtitlePx + 4;
    header_svg += fmt::format("<text x=\"12\" y=\"{}\" font-size=\"{}\" fill=\"#555\">{}</text>\n",
                              header, kSubtitlePx, svg_escape(line));
  }
  const double kTop = header + 18;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kPlotHeight;
  auto X = [&](double x) {
    return kLeft +
           plot_w * (std::log10(x) - std::log10(x_min)) / (std::log10(x_max) - std::log10(x_min));
  };
  auto Y = [&](double y) {
    return kTop + plot_h * (1 - (std::log10(y) - std::log10(y_min)) /
                                    (std::log10(y_max) - std::log10(y_min)));
  };
  const Box frame{kLeft + 1, kTop + 1, kLeft + plot_w - 1, kTop + plot_h - 1};
  std::vector<Box> taken;  // label boxes and point discs already on the page

  // Labels nudged down until they clear the ones already placed.
  std::vector<double> used_y;
  auto free_y = [&](double y) {
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
    return y;
  };
  std::string body = fmt::format(
      "<defs><clipPath id=\"plot\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>"
      "</clipPath></defs>\n",
      kLeft, kTop, plot_w, plot_h);
  // Grid and axes: one line per decade.
  for (double x = x_min; x <= x_max * 1.001; x *= 10) {
    body += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#ddd\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4:g}</text>\n",
        X(x), kTop, kTop + plot_h, kTop + plot_h + 18, x);
  }
  for (double y = y_min; y <= y_max * 1.001; y *= 10) {
    body += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
        kLeft, Y(y), kLeft + plot_w, kLeft - 6, Y(y) + 4, si(y, "FLOP/s"));
  }
  body += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" "
      "stroke=\"black\"/>\n",
      kLeft, kTop, plot_w, plot_h);
  body += fmt::format(
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">arithmetic intensity "
      "(FLOPs per byte)</text>\n",
      kLeft + plot_w / 2, kTop + plot_h + 40);
  body += fmt::format(
      "<text transform=\"translate(16,{}) rotate(-90)\" text-anchor=\"middle\">"
      "attainable FLOP/s</text>\n",
      kTop + plot_h / 2);
  body += "<g clip-path=\"url(#plot)\">\n";
  std::string outside;
  // Memory ceilings: bandwidth x intensity up to the highest compute ceiling.
  for (const auto& m : chart.memory) {
    double ridge = ridge_point_flops_per_byte(peak, m.value);
    body += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
        "stroke=\"#444\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>\n",
        X(x_min), Y(m.value * x_min), X(ridge), Y(peak));
    // At the left edge, above the line, where operators seldom sit.
    const std::string text = m.label + " " + si(m.value, "B/s");
    const double label_x = std::max(x_min, 3 * y_min / m.value);
    const double tx = X(label_x) + 4, ty = free_y(Y(m.value * label_x) - 8);
    body += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#444\"{}>{}</text>\n", tx, ty,
                        kHalo, svg_escape(text));
    taken.push_back({tx, ty - 11, tx + text_px(text, 12), ty + 3});
  }
  // Compute ceilings: flat lines from their ridge with the fastest memory level.
  for (const auto& c : chart.compute) {
    double ridge = ridge_point_flops_per_byte(c.value, fastest_bw);
    body += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
        "stroke=\"black\" stroke-width=\"2\"/>\n",
        X(ridge), Y(c.value), X(x_max), Y(c.value));
    // Outside the plot's clip region, right of the frame.
    outside += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{} {}</text>\n", X(x_max) + 6,
                           free_y(Y(c.value) + 4), svg_escape(c.label), si(c.value, "FLOP/s"));
  }
  // Points, one colour per group; points of a group within 3 px of each other share a mark.
  std::vector<std::string> groups;
  for (const auto& p : chart.points) {
    if (std::find(groups.begin(), groups.end(), p.group) == groups.end()) groups.push_back(p.group);
  }
  std::vector<Mark> marks;
  for (const auto& p : chart.points) {
    if (p.intensity_flops_per_byte <= 0 || p.attained_flops_per_s <= 0) continue;
    const size_t g = std::find(groups.begin(), groups.end(), p.group) - groups.begin();
    const double x = X(p.intensity_flops_per_byte), y = Y(p.attained_flops_per_s);
    const std::string hover =
        fmt::format("{} {}: {:.3g} FLOP/B, {}", p.group, p.label, p.intensity_flops_per_byte,
                    si(p.attained_flops_per_s, "FLOP/s"));
    auto same = std::find_if(marks.begin(), marks.end(), [&](const Mark& m) {
      return m.group == g && std::hypot(m.x - x, m.y - y) < 3.0;
    });
    if (same != marks.end()) {
      if (std::find(same->labels.begin(), same->labels.end(), p.label) == same->labels.end()) {
        same->labels.push_back(p.label);
      }
      same->weight += p.weight;
      same->title += "\n" + hover;
      continue;
    }
    marks.push_back({x, y, p.weight, g, {p.label}, hover});
  }
  for (const auto& m : marks) {
    body += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\" "
        "fill-opacity=\"0.8\"><title>{}</title></circle>\n",
        m.x, m.y, kColors[m.group % 8], svg_escape(m.title));
    taken.push_back({m.x - 4.5, m.y - 4.5, m.x + 4.5, m.y + 4.5});
  }
  // Labels: heaviest marks first; a mark whose name finds no room gets a number, listed
  // under the plot.
  std::vector<size_t> order(marks.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return marks[a].weight > marks[b].weight; });
  std::vector<std::pair<int, const Mark*>> numbered;
  std::string labels_svg;
  auto draw_label = [&](const Mark& m, const std::string& text, const Placement& at, bool bold) {
    taken.push_back(at.box);
    if (at.leader) {
      const double lx = std::clamp(m.x, at.box.x0, at.box.x1);
      const double ly = std::clamp(m.y, at.box.y0, at.box.y1);
      labels_svg += fmt::format(
          "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
          "stroke-width=\"0.7\"/>\n",
          m.x, m.y, lx, ly, kColors[m.group % 8]);
    }
    labels_svg += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"{}\" fill=\"{}\" text-anchor=\"{}\"{}{}>{}"
        "</text>\n",
        at.text_x, at.text_y, kPointLabelPx, kColors[m.group % 8], at.anchor, kHalo,
        bold ? " font-weight=\"bold\"" : "", svg_escape(text));
  };
  for (size_t i : order) {
    const Mark& m = marks[i];
    std::string text;
    for (const auto& l : m.labels) text += (text.empty() ? "" : ", ") + l;
    Placement at = place_label(m.x, m.y, label_px(text), taken, frame);
    if (at.placed) {
      draw_label(m, text, at, false);
      continue;
    }
    numbered.push_back({static_cast<int>(numbered.size() + 1), &m});
  }
  for (const auto& [n, m] : numbered) {
    const std::string text = std::to_string(n);
    Placement at = place_label(m->x, m->y, label_px(text), taken, frame);
    if (!at.placed) {  // on top of whatever is there: still findable in the list
      at = {true, m->x + 5, m->y - 5, "start", false, {m->x + 4, m->y - 15, m->x + 16, m->y - 2}};
    }
    draw_label(*m, text, at, true);
  }
  body += labels_svg + "</g>\n" + outside;
  // Legend of groups, bottom right.
  double ly = kTop + plot_h - 18.0 * groups.size();
  for (size_t g = 0; g < groups.size(); ++g, ly += 18) {
    body += fmt::format(
        "<circle cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"{}\"/><text x=\"{}\" "
        "y=\"{}\">{}</text>\n",
        kWidth - kRight + 20, ly, kColors[g % 8], kWidth - kRight + 30, ly + 4,
        svg_escape(groups[g]));
  }
  // The numbered names, in columns under the axis title.
  double height = kTop + plot_h + kBottom;
  if (!numbered.empty()) {
    constexpr double kColumnW = 438, kRowH = 14;
    const size_t columns = 2;
    const size_t rows = (numbered.size() + columns - 1) / columns;
    body += fmt::format(
        "<text x=\"12\" y=\"{}\" font-size=\"11\" fill=\"#555\">Numbered points "
        "(no room for their names beside them):</text>\n",
        height - 4);
    for (size_t k = 0; k < numbered.size(); ++k) {
      const auto& [n, m] = numbered[k];
      std::string names;
      for (const auto& l : m->labels) names += (names.empty() ? "" : ", ") + l;
      std::string text = fmt::format("{}  {} {}", n, groups[m->group], names);
      const size_t fit = static_cast<size_t>((kColumnW - 10) / (0.6 * kPointLabelPx));
      if (text.size() > fit) text = text.substr(0, fit - 1) + "\u2026";
      body += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"{}\" fill=\"{}\">{}</text>\n",
                          12 + kColumnW * static_cast<double>(k / rows),
                          height + 12 + kRowH * static_cast<double>(k % rows), kPointLabelPx,
                          kColors[m->group % 8], svg_escape(text));
    }
    height += 18 + kRowH * static_cast<double>(rows);
  }
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n",
      kWidth, height);
  svg += header_svg + body + "</svg>\n";
  return svg;
}

}  // namespace inferlab
