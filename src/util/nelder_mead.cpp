#include "util/nelder_mead.hpp"

#include <algorithm>
#include <numeric>

namespace inferlab {

namespace {

MinimizeResult simplex_run(const std::function<double(const std::vector<double>&)>& f,
                           const std::vector<double>& x0, double step, int max_evaluations) {
  const size_t n = x0.size();
  std::vector<std::vector<double>> points(n + 1, x0);
  for (size_t i = 0; i < n; ++i) points[i + 1][i] += step;
  std::vector<double> values(n + 1);
  int evaluations = 0;
  auto eval = [&](const std::vector<double>& x) {
    ++evaluations;
    return f(x);
  };
  for (size_t i = 0; i <= n; ++i) values[i] = eval(points[i]);
  std::vector<size_t> order(n + 1);
  while (evaluations < max_evaluations) {
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return values[a] < values[b]; });
    const size_t best = order.front(), worst = order.back(), second = order[n - 1];
    if (values[worst] - values[best] < 1e-12 * (1.0 + std::abs(values[best]))) break;
    std::vector<double> centroid(n, 0.0);
    for (size_t i = 0; i <= n; ++i) {
      if (i == worst) continue;
      for (size_t d = 0; d < n; ++d) centroid[d] += points[i][d] / static_cast<double>(n);
    }
    auto along = [&](double t) {
      std::vector<double> x(n);
      for (size_t d = 0; d < n; ++d) x[d] = centroid[d] + t * (points[worst][d] - centroid[d]);
      return x;
    };
    auto reflected = along(-1.0);
    double fr = eval(reflected);
    if (fr < values[best]) {
      auto expanded = along(-2.0);
      double fe = eval(expanded);
      if (fe < fr) {
        points[worst] = expanded, values[worst] = fe;
      } else {
        points[worst] = reflected, values[worst] = fr;
      }
    } else if (fr < values[second]) {
      points[worst] = reflected, values[worst] = fr;
    } else {
      auto contracted = along(fr < values[worst] ? -0.5 : 0.5);
      double fc = eval(contracted);
      if (fc < std::min(fr, values[worst])) {
        points[worst] = contracted, values[worst] = fc;
      } else {  // shrink towards the best point
        for (size_t i = 0; i <= n; ++i) {
          if (i == best) continue;
          for (size_t d = 0; d < n; ++d) {
            points[i][d] = points[best][d] + 0.5 * (points[i][d] - points[best][d]);
          }
          values[i] = eval(points[i]);
        }
      }
    }
  }
  size_t best =
      static_cast<size_t>(std::min_element(values.begin(), values.end()) - values.begin());
  return {points[best], values[best], evaluations};
}

}  // namespace

MinimizeResult minimize_nelder_mead(const std::function<double(const std::vector<double>&)>& f,
                                    std::vector<double> x0, double step, int max_evaluations,
                                    int restarts) {
  MinimizeResult result = simplex_run(f, x0, step, max_evaluations);
  for (int r = 0; r < restarts; ++r) {
    MinimizeResult again = simplex_run(f, result.x, step / (2.0 * (r + 1)), max_evaluations);
    again.evaluations += result.evaluations;
    if (again.value <= result.value) {
      result = again;
    } else {
      result.evaluations = again.evaluations;
    }
  }
  return result;
}

}  // namespace inferlab
