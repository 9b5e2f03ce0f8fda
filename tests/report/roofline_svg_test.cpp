#include "report/roofline_svg.hpp"

#include <gtest/gtest.h>

#include "util/error.hpp"

namespace inferlab {
namespace {

TEST(RooflineSvg, RidgePoint) {
  // 989.4 TFLOP/s over 3.35 TB/s: 295.3 FLOPs per byte.
  EXPECT_NEAR(ridge_point_flops_per_byte(989.4e12, 3.35e12), 295.34, 0.01);
}

TEST(RooflineSvg, DrawsEveryCeilingAndPoint) {
  RooflineChart chart;
  chart.title = "Test <GPU>";
  chart.compute = {{"bf16", 800e12}, {"fp32", 60e12}};
  chart.memory = {{"hbm", 3e12}, {"l2", 16e12}};
  chart.points = {{"gemm", 300, 500e12, "prefill"}, {"gemv", 1, 2.5e12, "decode"}};
  std::string svg = render_roofline_svg(chart);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("Test &lt;GPU&gt;"), std::string::npos);  // escaped
  EXPECT_NE(svg.find("bf16 800 TFLOP/s"), std::string::npos);
  EXPECT_NE(svg.find("hbm 3 TB/s"), std::string::npos);
  EXPECT_NE(svg.find("l2 16 TB/s"), std::string::npos);
  size_t circles = 0;
  for (size_t at = svg.find("<circle"); at != std::string::npos; at = svg.find("<circle", at + 1)) {
    ++circles;
  }
  EXPECT_EQ(circles, 2u + 2u);  // two points, two legend dots
}

// Labels whose positions land exactly one nudge apart once hung the renderer.
TEST(RooflineSvg, CrowdedCeilingsFinish) {
  RooflineChart chart;
  for (int i = 0; i < 12; ++i)
    chart.compute.push_back({"c" + std::to_string(i), 1e14 * (1 + 0.01 * i)});
  for (int i = 0; i < 6; ++i)
    chart.memory.push_back({"m" + std::to_string(i), 1e12 * (1 + 0.01 * i)});
  std::string svg = render_roofline_svg(chart);
  EXPECT_NE(svg.find("c11"), std::string::npos);
  EXPECT_NE(svg.find("m5"), std::string::npos);
}

// Every operator is named: beside its point, or by a number listed under the plot.
TEST(RooflineSvg, NamesEveryOperatorEvenWhenCrowded) {
  RooflineChart chart;
  chart.compute = {{"bf16", 800e12}};
  chart.memory = {{"hbm", 3e12}};
  for (int i = 0; i < 40; ++i) {
    chart.points.push_back({"op_" + std::to_string(i), 1.0 + 0.05 * i, 1e12 * (1 + 0.02 * i),
                            i % 2 ? "decode" : "prefill", 0.01 * i});
  }
  const std::string svg = render_roofline_svg(chart);
  for (int i = 0; i < 40; ++i) {
    const std::string name = "op_" + std::to_string(i);
    EXPECT_TRUE(svg.find(">" + name + "<") != std::string::npos ||
                svg.find(" " + name + "<") != std::string::npos ||
                svg.find(" " + name + ",") != std::string::npos ||
                svg.find(">" + name + ",") != std::string::npos)
        << name;
  }
  EXPECT_NE(svg.find("Numbered points"), std::string::npos);
}

// Points of one group on the same spot share one label.
TEST(RooflineSvg, CoincidingPointsShareALabel) {
  RooflineChart chart;
  chart.compute = {{"bf16", 800e12}};
  chart.memory = {{"hbm", 3e12}};
  chart.points = {{"q_proj", 1, 2e12, "decode"}, {"k_proj", 1, 2e12, "decode"}};
  const std::string svg = render_roofline_svg(chart);
  EXPECT_NE(svg.find(">q_proj, k_proj</text>"), std::string::npos);
}

// A title longer than the frame wraps onto more lines, each within the 900 px width (at 0.6
// em a character, wider than the sans-serif average).
TEST(RooflineSvg, LongTitleWrapsInsideTheFrame) {
  RooflineChart chart;
  chart.compute = {{"bf16", 800e12}};
  chart.memory = {{"hbm", 3e12}};
  chart.title =
      "NVIDIA H200 SXM 141GB: llama-3.1-405b operators, batch 256, prefill of 32768 "
      "tokens and one decode step (pytorch kernels), with a needlessly long tail";
  const std::string svg = render_roofline_svg(chart);
  size_t lines = 0;
  for (size_t at = svg.find("font-weight=\"bold\">"); at != std::string::npos;
       at = svg.find("font-weight=\"bold\">", at + 1)) {
    const size_t begin = svg.find('>', at) + 1, end = svg.find("</text>", begin);
    EXPECT_LE(12 + 0.6 * 15 * static_cast<double>(end - begin), 900.0);
    ++lines;
  }
  EXPECT_EQ(lines, 2u);
  EXPECT_NE(svg.find("viewBox=\"0 0 900 "), std::string::npos);
}

TEST(RooflineSvg, NothingToDrawIsAnError) {
  RooflineChart chart;
  EXPECT_THROW(render_roofline_svg(chart), InputError);
}

}  // namespace
}  // namespace inferlab
