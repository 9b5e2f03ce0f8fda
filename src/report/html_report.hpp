#pragma once
#include <string>
#include <vector>

namespace inferlab {

// One self-contained HTML page (inline CSS, SVG and script; nothing fetched at view time):
// a header, a row of headline figures, then sections of charts and tables.
struct HtmlFigure {
  std::string label, value, note;  // e.g. "TTFT", "41.2 ms", "prefill 40.9 ms + 1 decode"
  bool warn = false;               // drawn in red (e.g. "fits: no")
};
struct HtmlSection {
  std::string title, intro;  // intro: plain text, escaped
  std::string body_html;     // trusted markup: inline SVG, tables
  bool half = false;         // half width: two such sections share a row
};
struct HtmlPage {
  std::string title, subtitle;
  std::vector<HtmlFigure> figures;
  std::vector<HtmlSection> sections;
  std::string footer;
};

// The page. Its script sets data-report-status="ok" on <html> when it ran to the end, and
// data-report-error="message" on any script error (tests read them from the rendered DOM).
std::string render_html_page(const HtmlPage& page);

// Text for HTML: &, <, >, " and ' escaped.
std::string html_escape(const std::string& text);

// A table; cells are text (escaped). Columns listed in `numeric` are right-aligned; a header
// click sorts by that column.
std::string html_table(const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows,
                       const std::vector<size_t>& numeric = {});

}  // namespace inferlab
