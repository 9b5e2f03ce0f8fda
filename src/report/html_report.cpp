#include "report/html_report.hpp"

#include <algorithm>

#include "report/svg_text.hpp"

namespace inferlab {

namespace {

// System fonts only: nothing is fetched when the page is viewed.
constexpr const char* kStyle = R"css(
:root{--ink:#1d2430;--muted:#5b6675;--line:#e3e7ee;--panel:#fff;--bg:#f4f6f9;--accent:#1f77b4;--warn:#c0392b}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif}
header{background:#1d2430;color:#fff;padding:18px 28px 16px}
header h1{margin:0 0 4px;font-size:21px;font-weight:600}
header p{margin:0;color:#c9d1dc;font-size:13px}
main{padding:18px 28px 28px;display:grid;grid-template-columns:1fr 1fr;gap:16px}
.figures{grid-column:1/-1;display:grid;grid-template-columns:repeat(auto-fill,minmax(128px,1fr));gap:10px}
.figure{background:var(--panel);border:1px solid var(--line);border-radius:8px;padding:10px 12px}
.figure .label{color:var(--muted);font-size:11px;white-space:nowrap;text-transform:uppercase;letter-spacing:.04em}
.figure .value{font-size:19px;white-space:nowrap;font-weight:600;font-variant-numeric:tabular-nums}
.figure .note{color:var(--muted);font-size:12px}
.figure.warn .value{color:var(--warn)}
section{background:var(--panel);border:1px solid var(--line);border-radius:8px;padding:14px 16px;grid-column:1/-1;min-width:0}
section.half{grid-column:auto}
section h2{margin:0 0 4px;font-size:16px}
section p.intro{margin:0 0 10px;color:var(--muted);font-size:13px}
svg{max-width:100%;height:auto;display:block}
table{border-collapse:collapse;width:100%;font-size:12.5px;font-variant-numeric:tabular-nums}
th,td{padding:4px 8px;border-bottom:1px solid var(--line);text-align:left;white-space:nowrap}
th{color:var(--muted);font-weight:600;cursor:pointer;user-select:none;background:#fafbfc;position:sticky;top:0}
th.sorted-asc::after{content:" \25B2"}th.sorted-desc::after{content:" \25BC"}
td.num,th.num{text-align:right}
tr:hover td{background:#f3f7fc}
.scroll{max-height:460px;overflow:auto}
footer{padding:0 28px 24px;color:var(--muted);font-size:12px}
@media (max-width:900px){main{grid-template-columns:1fr}section.half{grid-column:1/-1}}
)css";

// Sortable tables; the status markers a test (or a curious reader) can check.
// In <head>, so that an error in any later script is caught.
constexpr const char* kErrorScript = R"js(
window.onerror = function (message) {
  document.documentElement.setAttribute('data-report-error', String(message));
};
)js";
constexpr const char* kScript = R"js(
(function () {
  function key(cell) {
    var text = cell.textContent.trim();
    var number = parseFloat(text.replace(/[^0-9eE+\-.]/g, ''));
    return isNaN(number) ? text.toLowerCase() : number;
  }
  document.querySelectorAll('table.sortable').forEach(function (table) {
    var heads = table.querySelectorAll('th');
    heads.forEach(function (th, column) {
      th.addEventListener('click', function () {
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var ascending = !th.classList.contains('sorted-asc');
        heads.forEach(function (h) { h.classList.remove('sorted-asc', 'sorted-desc'); });
        th.classList.add(ascending ? 'sorted-asc' : 'sorted-desc');
        rows.sort(function (a, b) {
          var x = key(a.cells[column]), y = key(b.cells[column]);
          if (typeof x !== typeof y) { x = String(x); y = String(y); }
          return (x < y ? -1 : x > y ? 1 : 0) * (ascending ? 1 : -1);
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  });
  document.documentElement.setAttribute('data-report-status', 'ok');
})();
)js";

}  // namespace

std::string html_escape(const std::string& text) {
  // SVG's escapes, plus the single quote (attribute values may be in either quote).
  std::string out;
  for (char c : svg_escape(text)) {
    if (c == '\'') {
      out += "&#39;";
    } else {
      out += c;
    }
  }
  return out;
}

std::string html_table(const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows,
                       const std::vector<size_t>& numeric) {
  auto is_numeric = [&](size_t column) {
    return std::find(numeric.begin(), numeric.end(), column) != numeric.end();
  };
  std::string html = "<table class=\"sortable\"><thead><tr>";
  for (size_t c = 0; c < header.size(); ++c) {
    html += (is_numeric(c) ? "<th class=\"num\">" : "<th>") + html_escape(header[c]) + "</th>";
  }
  html += "</tr></thead><tbody>\n";
  for (const auto& row : rows) {
    html += "<tr>";
    for (size_t c = 0; c < row.size(); ++c) {
      html += (is_numeric(c) ? "<td class=\"num\">" : "<td>") + html_escape(row[c]) + "</td>";
    }
    html += "</tr>\n";
  }
  html += "</tbody></table>\n";
  return html;
}

std::string render_html_page(const HtmlPage& page) {
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  html += "<title>" + html_escape(page.title) + "</title>\n<style>" + kStyle + "</style>\n";
  html += std::string("<script>") + kErrorScript + "</script>\n";
  html += "</head>\n<body>\n<header><h1>" + html_escape(page.title) + "</h1><p>" +
          html_escape(page.subtitle) + "</p></header>\n<main>\n";
  if (!page.figures.empty()) {
    html += "<div class=\"figures\">\n";
    for (const auto& f : page.figures) {
      html += std::string("<div class=\"figure") + (f.warn ? " warn" : "") +
              "\"><div class=\"label\">" + html_escape(f.label) + "</div><div class=\"value\">" +
              html_escape(f.value) + "</div><div class=\"note\">" + html_escape(f.note) +
              "</div></div>\n";
    }
    html += "</div>\n";
  }
  for (const auto& s : page.sections) {
    html += std::string("<section") + (s.half ? " class=\"half\"" : "") + "><h2>" +
            html_escape(s.title) + "</h2>\n";
    if (!s.intro.empty()) html += "<p class=\"intro\">" + html_escape(s.intro) + "</p>\n";
    html += s.body_html + "</section>\n";
  }
  html += "</main>\n<footer>" + html_escape(page.footer) + "</footer>\n";
  html += std::string("<script>") + kScript + "</script>\n</body>\n</html>\n";
  return html;
}

}  // namespace inferlab
