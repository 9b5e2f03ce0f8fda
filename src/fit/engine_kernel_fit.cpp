#include "fit/engine_kernel_fit.hpp"

#include <algorithm>
#include <cmath>

namespace inferlab {

namespace {

constexpr double kMinEfficiency = 0.01, kMaxEfficiency = 4.0;
constexpr double kMaxT0_s = 1e-3;
constexpr int kGridSteps = 48;        // per log-efficiency axis
constexpr double kFinestStep = 1e-5;  // of the compass search, in log-efficiency

struct Problem {
  const std::vector<EngineKernelSample>& samples;
  const EngineKernelPrior& prior;

  // Sum of the max terms (work) and of the launches of one sample at efficiencies (c, m).
  static void parts(const EngineKernelSample& s, double c, double m, double& work_s,
                    double& launches) {
    work_s = 0.0;
    launches = 0.0;
    for (const auto& t : s.terms) {
      work_s += std::max(t.compute_s / c, t.memory_s / m);
      launches += t.launches;
    }
  }

  // The best t0 for fixed efficiencies (the loss is quadratic in it), clamped to its range.
  double best_t0(double c, double m) const {
    const double w = prior.weight / (prior.t0_scale_s * prior.t0_scale_s);
    double num = w * prior.t0_s, den = w;
    for (const auto& s : samples) {
      double work_s, launches;
      parts(s, c, m, work_s, launches);
      const double a = launches / s.target_s;
      num += a * (1.0 - work_s / s.target_s);
      den += a * a;
    }
    return std::clamp(num / den, 0.0, kMaxT0_s);
  }

  double loss(double t0, double log_c, double log_m) const {
    const double c = std::exp(log_c), m = std::exp(log_m);
    double sum = 0.0;
    for (const auto& s : samples) {
      double work_s, launches;
      parts(s, c, m, work_s, launches);
      const double r = (launches * t0 + work_s) / s.target_s - 1.0;
      sum += r * r;
    }
    const double dt = (t0 - prior.t0_s) / prior.t0_scale_s;
    const double dc = log_c - std::log(prior.compute_efficiency);
    const double dm = log_m - std::log(prior.memory_efficiency);
    return sum + prior.weight * (dt * dt + dc * dc + dm * dm);
  }

  // The loss at the best t0 for these efficiencies.
  double profile_loss(double log_c, double log_m, double& t0) const {
    t0 = best_t0(std::exp(log_c), std::exp(log_m));
    return loss(t0, log_c, log_m);
  }
};

}  // namespace

EngineBound engine_bound_of_path(const std::string& path) {
  // The GEMVs are both: bandwidth at bf16, arithmetic for the dequantizing formats (the
  // streaming GEMV's CUDA-core math, the tensor-core GEMV's row tiles; H200, 2026-11-25).
  if (path == "gemm" || path == "naive" || path.rfind("gemv", 0) == 0) return EngineBound::either;
  if (path == "flash_prefill") return EngineBound::compute;
  return EngineBound::memory;
}

double engine_sample_time_s(const EngineKernelSample& sample, const EngineKernelParams& p) {
  double total = 0.0;
  for (const auto& t : sample.terms) {
    total += t.launches * p.t0_s +
             std::max(t.compute_s / p.compute_efficiency, t.memory_s / p.memory_efficiency);
  }
  return total;
}

EngineKernelParams fit_engine_kernel(const std::vector<EngineKernelSample>& all,
                                     const EngineKernelPrior& prior, EngineBound bound) {
  std::vector<EngineKernelSample> samples;
  for (const auto& s : all) {
    if (s.target_s > 0.0 && std::isfinite(s.target_s)) samples.push_back(s);
  }
  EngineKernelParams out;
  out.t0_s = prior.t0_s;
  out.compute_efficiency = prior.compute_efficiency;
  out.memory_efficiency = prior.memory_efficiency;
  if (samples.empty()) return out;
  const Problem problem{samples, prior};
  const double lo = std::log(kMinEfficiency), hi = std::log(kMaxEfficiency);
  const double grid_step = (hi - lo) / kGridSteps;
  // An efficiency not fitted stays at the prior: its range is that one value.
  const double c_prior = std::log(prior.compute_efficiency);
  const double m_prior = std::log(prior.memory_efficiency);
  const bool fit_c = bound != EngineBound::memory, fit_m = bound != EngineBound::compute;
  const double c_lo = fit_c ? lo : c_prior, c_hi = fit_c ? hi : c_prior;
  const double m_lo = fit_m ? lo : m_prior, m_hi = fit_m ? hi : m_prior;
  // A grid over both log-efficiencies first: the max() makes the loss piecewise, with flat
  // directions where one part never binds, so a local search alone can stall.
  double best_c = std::log(prior.compute_efficiency), best_m = std::log(prior.memory_efficiency);
  double best_t0 = 0.0;
  double best = problem.profile_loss(best_c, best_m, best_t0);
  for (int i = 0; i <= (fit_c ? kGridSteps : 0); ++i) {
    for (int j = 0; j <= (fit_m ? kGridSteps : 0); ++j) {
      const double lc = fit_c ? lo + i * grid_step : c_prior;
      const double lm = fit_m ? lo + j * grid_step : m_prior;
      double t0 = 0.0;
      const double l = problem.profile_loss(lc, lm, t0);
      if (l < best) best = l, best_c = lc, best_m = lm, best_t0 = t0;
    }
  }
  // Then a compass search from the best grid point, halving its step until it is fine.
  for (double step = grid_step; step > kFinestStep;) {
    bool moved = false;
    const double moves[4][2] = {{step, 0}, {-step, 0}, {0, step}, {0, -step}};
    for (const auto& mv : moves) {
      const double lc = std::clamp(best_c + mv[0], c_lo, c_hi);
      const double lm = std::clamp(best_m + mv[1], m_lo, m_hi);
      if (lc == best_c && lm == best_m) continue;
      double t0 = 0.0;
      const double l = problem.profile_loss(lc, lm, t0);
      if (l < best) {
        best = l, best_c = lc, best_m = lm, best_t0 = t0;
        moved = true;
        break;
      }
    }
    if (!moved) step /= 2.0;
  }
  out.t0_s = best_t0;
  // exp(log(x)) may land a rounding step outside the range a file is checked against.
  out.compute_efficiency = std::clamp(std::exp(best_c), kMinEfficiency, kMaxEfficiency);
  out.memory_efficiency = std::clamp(std::exp(best_m), kMinEfficiency, kMaxEfficiency);
  out.points = static_cast<int>(samples.size());
  double ape = 0.0;
  for (const auto& s : samples) ape += std::fabs(engine_sample_time_s(s, out) / s.target_s - 1.0);
  out.mape = ape / static_cast<double>(samples.size());
  return out;
}

}  // namespace inferlab
