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

TEST(RooflineSvg, NothingToDrawIsAnError) {
  RooflineChart chart;
  EXPECT_THROW(render_roofline_svg(chart), InputError);
}

}  // namespace
}  // namespace inferlab
