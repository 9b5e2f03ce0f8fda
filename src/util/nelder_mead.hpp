#pragma once
#include <functional>
#include <vector>

namespace inferlab {

struct MinimizeResult {
  std::vector<double> x;
  double value = 0.0;
  int evaluations = 0;
};

// Derivative-free minimisation (Nelder-Mead simplex) of f from x0 with initial step `step` in
// every coordinate. Deterministic. Restarts from the best point `restarts` times, which gets
// it out of the collapsed simplices the method is known for.
MinimizeResult minimize_nelder_mead(const std::function<double(const std::vector<double>&)>& f,
                                    std::vector<double> x0, double step, int max_evaluations,
                                    int restarts = 2);

}  // namespace inferlab
