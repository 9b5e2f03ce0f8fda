#include "report/html_report.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "report/html_report_charts.hpp"
#include "test_support.hpp"
#include "util/error.hpp"

namespace inferlab {
namespace {

namespace fs = std::filesystem;
using testing::run_inferlab;

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh folder per test, kept under the temp dir so that the screenshots can be looked at
// after a run (INFERLAB_REPORT_SHOTS names another place).
fs::path work_dir(const std::string& name) {
  const char* keep = std::getenv("INFERLAB_REPORT_SHOTS");
  fs::path dir = keep ? fs::path(keep)
                      : fs::temp_directory_path() / ("inferlab_html_" + std::to_string(::getpid()));
  dir /= name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

int shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool have_chromium() {
  return shell("command -v chromium >/dev/null 2>&1") == 0;
}

// Nothing the page needs comes from elsewhere: no external scripts, styles, fonts or images.
void expect_self_contained(const std::string& html) {
  for (const char* needle :
       {"<script src", "<link", "@import", "url(http", "src=\"http", "href=\"http", "@font-face"}) {
    EXPECT_EQ(html.find(needle), std::string::npos) << needle;
  }
  // The only URL is the SVG namespace name, which is never fetched.
  size_t at = 0;
  while ((at = html.find("http", at)) != std::string::npos) {
    EXPECT_EQ(html.compare(at, 26, "http://www.w3.org/2000/svg"), 0) << html.substr(at, 60);
    at += 4;
  }
}

// Chromium headless, as CI runs it: a fresh profile, no network services.
std::string chromium(const fs::path& dir, const std::string& mode, const fs::path& html) {
  const fs::path profile = dir / "profile";  // fresh for each run, removed after it
  fs::remove_all(profile);
  return "timeout 180 chromium --headless --no-sandbox --disable-gpu --disable-quic "
         "--no-first-run --disable-background-networking --disable-component-update "
         "--disable-sync --disable-dev-shm-usage --hide-scrollbars --user-data-dir=" +
         profile.string() + " " + mode + " --window-size=1200,1600 file://" +
         fs::absolute(html).string();
}

// Decodes the PNG (python3's zlib; 8-bit RGB or RGBA, not interlaced) down to `rows` rows and
// prints: width height distinct_colors non_white_fraction.
constexpr const char* kPngStats = R"py(
import struct, sys, zlib
data = open(sys.argv[1], 'rb').read()
assert data[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
pos, idat, w, h = 8, b'', 0, 0
while pos < len(data):
    n, kind = struct.unpack('>I4s', data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b'IHDR':
        w, h, depth, color, _, _, interlace = struct.unpack('>IIBBBBB', body)
        assert depth == 8 and color in (2, 6) and interlace == 0, (depth, color, interlace)
        bpp = 3 if color == 2 else 4
    elif kind == b'IDAT':
        idat += body
    pos += 12 + n
raw = zlib.decompress(idat)
stride = w * bpp
rows = min(h, int(sys.argv[2]))
prev = bytearray(stride)
colors, non_white = set(), 0
for y in range(rows):
    f = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + ((a + b) >> 1)) & 255
        elif f == 4:
            c = prev[i - bpp] if i >= bpp else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        px = bytes(line[x:x + 3])
        colors.add(px)
        if px != b'\xff\xff\xff':
            non_white += 1
    prev = line
print(w, h, len(colors), non_white / float(rows * w))
)py";

struct PngStats {
  int width = 0, height = 0, colors = 0;
  double non_white = 0;
};
PngStats png_stats(const fs::path& dir, const fs::path& png, int rows) {
  const fs::path script = dir / "png_stats.py", out = dir / "png_stats.txt";
  std::ofstream(script) << kPngStats;
  const int rc = shell("python3 " + script.string() + " " + png.string() + " " +
                       std::to_string(rows) + " >" + out.string() + " 2>&1");
  PngStats s;
  std::istringstream in(slurp(out));
  in >> s.width >> s.height >> s.colors >> s.non_white;
  EXPECT_EQ(rc, 0) << slurp(out);
  return s;
}

// Renders the page and returns its DOM after the scripts ran.
std::string dump_dom(const fs::path& dir, const fs::path& html) {
  const fs::path dom = dir / (html.stem().string() + ".dom.html");
  EXPECT_EQ(shell(chromium(dir, "--dump-dom", html) + " >" + dom.string() + " 2>" +
                  (dir / "dom.log").string()),
            0)
      << slurp(dir / "dom.log");
  fs::remove_all(dir / "profile");
  return slurp(dom);
}

// Renders the page, checks the screenshot is a picture and the DOM reports no script error.
void render_and_check(const fs::path& dir, const fs::path& html) {
  if (!have_chromium()) GTEST_SKIP() << "chromium is not installed (scripts/install-deps.sh)";
  const fs::path png = dir / (html.stem().string() + ".png");
  ASSERT_EQ(shell(chromium(dir, "--screenshot=" + png.string(), html) + " >" +
                  (dir / "shot.log").string() + " 2>&1"),
            0)
      << slurp(dir / "shot.log");
  fs::remove_all(dir / "profile");
  ASSERT_TRUE(fs::exists(png)) << slurp(dir / "shot.log");
  const std::string rendered = dump_dom(dir, html);
  EXPECT_NE(rendered.find("data-report-status=\"ok\""), std::string::npos)
      << "the page's script did not finish";
  // The attribute, not the script's text that would set it.
  EXPECT_EQ(rendered.find("data-report-error="), std::string::npos)
      << rendered.substr(0, std::min<size_t>(rendered.size(), 400));
  EXPECT_NE(rendered.find("<svg"), std::string::npos);
  // The top of the page: header, figures and the first chart.
  const PngStats s = png_stats(dir, png, 700);
  EXPECT_EQ(s.width, 1200);
  EXPECT_EQ(s.height, 1600);
  EXPECT_GE(s.colors, 64) << "a blank or nearly blank screenshot";
  EXPECT_GT(s.non_white, 0.05);
  std::cout << "screenshot: " << png.string() << " (" << s.colors << " colours)\n";
}

TEST(HtmlReport, PageCarriesStatusMarkersAndEscapes) {
  HtmlPage page;
  page.title = "a <b> & \"c\"";
  page.figures = {{"TTFT", "1.0 ms", "note", true}};
  page.sections = {{"s", "intro <x>", "<svg></svg>", true}};
  const std::string html = render_html_page(page);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("a &lt;b&gt; &amp; &quot;c&quot;"), std::string::npos);
  EXPECT_NE(html.find("intro &lt;x&gt;"), std::string::npos);
  EXPECT_NE(html.find("data-report-status"), std::string::npos);
  EXPECT_NE(html.find("window.onerror"), std::string::npos);
  EXPECT_NE(html.find("figure warn"), std::string::npos);
  expect_self_contained(html);
}

TEST(HtmlReport, TableRightAlignsNumbers) {
  const std::string t = html_table({"op", "ms"}, {{"gemm", "1.5"}, {"<x>", "2"}}, {1});
  EXPECT_NE(t.find("<th class=\"num\">ms</th>"), std::string::npos);
  EXPECT_NE(t.find("<td class=\"num\">1.5</td>"), std::string::npos);
  EXPECT_NE(t.find("&lt;x&gt;"), std::string::npos);
}

TEST(HtmlReportCharts, StackedBarsShareColoursByName) {
  const std::string svg = render_stacked_bars_svg(
      {{"prefill", "2 ms", {{"gemm", 3, "3 ms", ""}, {"attn", 1, "1 ms", ""}}},
       {"decode", "1 ms", {{"attn", 1, "1 ms", ""}, {"gemm", 1, "1 ms", ""}}}});
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  // Two segments of each name, one legend swatch each, and the same colour for "gemm".
  const std::string gemm_fill = "fill=\"" + palette_color(0) + "\"";
  size_t n = 0;
  for (size_t at = svg.find(gemm_fill); at != std::string::npos; at = svg.find(gemm_fill, at + 1))
    ++n;
  EXPECT_EQ(n, 3u);
}

TEST(HtmlReportCharts, ParityChartNeedsPositivePoints) {
  EXPECT_THROW(render_parity_svg({"g", "", "ms", {{0, 1, "x"}}}), InputError);
  const std::string svg =
      render_parity_svg({"gemm", "MAPE 5%", "ms", {{1.0, 1.05, "a"}, {0.1, 0.2, "b"}}});
  EXPECT_NE(svg.find("y = x"), std::string::npos);
  EXPECT_NE(svg.find("#d62728"), std::string::npos);  // b is 100% off: red
}

// The marker the Chromium tests look for does appear when a script fails.
TEST(HtmlReport, ScriptErrorIsMarkedInTheDom) {
  if (!have_chromium()) GTEST_SKIP() << "chromium is not installed (scripts/install-deps.sh)";
  const fs::path dir = work_dir("script_error");
  HtmlPage page;
  page.title = "broken";
  page.sections = {{"s", "", "<script>no_such_function();</script>", false}};
  const fs::path html = dir / "broken.html";
  std::ofstream(html) << render_html_page(page);
  const std::string rendered = dump_dom(dir, html);
  EXPECT_NE(rendered.find("data-report-error=\""), std::string::npos) << rendered.substr(0, 300);
}

TEST(ReportCommand, BadInputIsExitTwo) {
  const fs::path dir = work_dir("bad_input");
  const std::string out = (dir / "r.html").string();
  auto r = run_inferlab("report --kind pictures --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("inferlab: error: unknown --kind 'pictures'; known: predict, serve, "
                       "validate"),
            std::string::npos)
      << r.err;
  r = run_inferlab("report --kind predict --out /nonexistent-dir/r.html");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("inferlab: error: cannot write --out '/nonexistent-dir/r.html'"),
            std::string::npos)
      << r.err;
  r = run_inferlab("report --kind validate --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("inferlab: error: --kind validate needs --data"), std::string::npos)
      << r.err;
  r = run_inferlab("report --kind predict --data x.json --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--data applies to --kind validate, not to --kind predict"),
            std::string::npos)
      << r.err;
  r = run_inferlab("report --kind validate --rate 3 --data x.json --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--rate applies to --kind serve"), std::string::npos) << r.err;
  r = run_inferlab("report --kind predict");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("inferlab: error:"), std::string::npos);
  EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;
  r = run_inferlab("report --kind predict --model no-such-model --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("inferlab: error:"), std::string::npos);
  EXPECT_FALSE(fs::exists(out));  // nothing written on bad input
}

TEST(ReportCommand, PredictRendersInChromium) {
  const fs::path dir = work_dir("predict");
  const fs::path html = dir / "predict.html";
  auto r = run_inferlab(
      "report --kind predict --model llama-3-8b --hardware h100-sxm "
      "--batch 8 --input 1024 --output 256 --format json --out " +
      html.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"kind\": \"predict\""), std::string::npos) << r.out;
  const std::string page = slurp(html);
  expect_self_contained(page);
  for (const char* part : {"Where the time goes", "Roofline", "Memory", "Per-operator breakdown",
                           "Prefill step", "Decode step", "TTFT"}) {
    EXPECT_NE(page.find(part), std::string::npos) << part;
  }
  render_and_check(dir, html);
}

TEST(ReportCommand, ServeRendersInChromium) {
  const fs::path dir = work_dir("serve");
  const fs::path html = dir / "serve.html";
  auto r = run_inferlab(
      "report --kind serve --model llama-3.2-1b --hardware h100-sxm "
      "--requests 200 --rate 40 --out " +
      html.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string page = slurp(html);
  expect_self_contained(page);
  for (const char* part :
       {"TTFT CDF", "TPOT CDF", "E2E CDF", "KV cache use over time", "Batch size over time"}) {
    EXPECT_NE(page.find(part), std::string::npos) << part;
  }
  render_and_check(dir, html);
}

TEST(ReportCommand, ValidateRendersInChromium) {
  const fs::path dir = work_dir("validate");
  const fs::path html = dir / "validate.html";
  const std::string data =
      testing::test_data_dir() + "/../validation/data/torch_reference_h100_2026-11-22b.json";
  auto r = run_inferlab("report --kind validate --hardware h100-sxm --split holdout --data " +
                        data + " --out " + html.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string page = slurp(html);
  expect_self_contained(page);
  for (const char* part : {"Accuracy per group", "predicted vs measured", "y = x", "MAPE"}) {
    EXPECT_NE(page.find(part), std::string::npos) << part;
  }
  render_and_check(dir, html);
}

}  // namespace
}  // namespace inferlab
