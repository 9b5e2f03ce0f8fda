#include "fit/engine_kernel_fit.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

namespace inferlab {

namespace {

constexpr double kMinEfficiency = 0.01, kMaxEfficiency = 4.0;
constexpr double kMaxT0_s = 1e-3;
constexpr int kGridSteps = 48;        // per log-efficiency axis
constexpr double kFinestStep = 1e-5;  // of the compass search, in log-efficiency

// The scale of the weak pull of a CTA's fixed cost towards 0 (a few microseconds is what a CTA's
// prologue and epilogue take), and of a combine trip's.
constexpr double kCtaFixedScale_s = 20e-6;

// The parameters the loss is quadratic in: the fixed time per kernel and per unit of the key's
// second fixed cost, a CTA wave (tiled prefill attention) or a further combine trip (flash
// decode; no kernel has both).
struct Linear {
  double t0_s = 0.0;
  double unit_s = 0.0;  // per unit: per CTA wave, per further combine trip or per staged KiB
};
enum class Units { none, waves, trips, staged_input };

// A point of the search: log-efficiencies (compute, memory, per-CTA), then the serial
// fraction (linear, in [0, 1]).
using LogEff = std::array<double, 4>;
using Eff = std::array<double, 4>;  // the efficiencies themselves, then the serial fraction
constexpr int kAxes = 4;
constexpr int kSerialGridSteps = 8;

// One term's work: the roofline's max of compute and memory plus the serial share of the
// smaller, or the per-CTA stream where that is longer.
double term_work_s(const EngineWorkTerm& t, double e_compute, double e_memory, double e_cta,
                   double serial) {
  const double c = t.compute_s / e_compute, m = t.memory_s / e_memory;
  double w = std::max(c, m) + serial * std::min(c, m);
  if (t.cta_s > 0.0 && e_cta > 0.0) w = std::max(w, t.cta_s / e_cta);
  return w;
}

Eff efficiencies(const LogEff& log_e) {
  return {std::exp(log_e[0]), std::exp(log_e[1]), std::exp(log_e[2]), log_e[3]};
}

struct Problem {
  const std::vector<EngineKernelSample>& samples;
  const EngineKernelPrior& prior;

  const Units units;  // the second fixed cost fitted beside t0, if any
  // The unit's cost where it is given (prior.combine_trip_s for trips), else negative.
  double fixed_unit_s() const {
    return units == Units::trips && prior.combine_trip_s >= 0.0 ? prior.combine_trip_s : -1.0;
  }
  bool fit_unit() const { return units != Units::none && fixed_unit_s() < 0.0; }

  // Sum of the max terms (work), of the launches and of the units of the second fixed cost
  // (CTA waves or combine trips) of one sample at efficiencies e.
  void parts(const EngineKernelSample& s, const Eff& e, double& work_s, double& launches,
             double& units_in) const {
    work_s = launches = units_in = 0.0;
    for (const auto& t : s.terms) {
      work_s += term_work_s(t, e[0], e[1], e[2], e[3]);
      launches += t.launches;
      units_in += units == Units::trips          ? t.combine_trips
                  : units == Units::staged_input ? t.staged_input_kib
                                                 : t.cta_waves;
    }
  }

  // The best (t0, t_unit) for fixed efficiencies: the loss is quadratic in both (normal
  // equations of two unknowns, t0 pulled to its prior, t_unit weakly to 0), each clamped to its
  // range.
  Linear best_linear(const Eff& e) const {
    const double w0 = prior.weight / (prior.t0_scale_s * prior.t0_scale_s);
    const double wc = prior.weight / (kCtaFixedScale_s * kCtaFixedScale_s);
    double a00 = w0, a01 = 0.0, a11 = wc, b0 = w0 * prior.t0_s, b1 = 0.0;
    const double fixed_s = std::max(0.0, fixed_unit_s());
    for (const auto& s : samples) {
      double work_s, launches, n_units;
      parts(s, e, work_s, launches, n_units);
      const double l = launches / s.target_s, c = n_units / s.target_s;
      const double rest = 1.0 - (work_s + n_units * fixed_s) / s.target_s;
      a00 += l * l, a01 += l * c, a11 += c * c, b0 += l * rest, b1 += c * rest;
    }
    Linear out;
    if (fit_unit()) {
      const double det = a00 * a11 - a01 * a01;
      out.t0_s = (b0 * a11 - b1 * a01) / det;
      out.unit_s = (a00 * b1 - a01 * b0) / det;
      if (out.unit_s < 0.0) out.unit_s = 0.0;  // then t0 alone
      if (out.t0_s < 0.0) {
        out.t0_s = 0.0;
        out.unit_s = b1 / a11;
      }
      if (out.unit_s == 0.0) out.t0_s = b0 / a00;
    } else {
      out.t0_s = b0 / a00;
      out.unit_s = fixed_s;
    }
    out.t0_s = std::clamp(out.t0_s, 0.0, kMaxT0_s);
    out.unit_s = std::clamp(out.unit_s, 0.0, kMaxT0_s);
    return out;
  }

  double loss(const Linear& lin, const LogEff& log_e) const {
    const Eff e = efficiencies(log_e);
    double sum = 0.0;
    for (const auto& s : samples) {
      double work_s, launches, n_units;
      parts(s, e, work_s, launches, n_units);
      const double r = (launches * lin.t0_s + n_units * lin.unit_s + work_s) / s.target_s - 1.0;
      sum += r * r;
    }
    const double dt = (lin.t0_s - prior.t0_s) / prior.t0_scale_s;
    const double dtc = lin.unit_s / kCtaFixedScale_s;
    const double dc = log_e[0] - std::log(prior.compute_efficiency);
    const double dm = log_e[1] - std::log(prior.memory_efficiency);
    return sum + prior.weight * (dt * dt + dtc * dtc + dc * dc + dm * dm);
  }

  // The loss at the best linear parameters for these efficiencies.
  double profile_loss(const LogEff& log_e, Linear& lin) const {
    lin = best_linear(efficiencies(log_e));
    return loss(lin, log_e);
  }
};

}  // namespace

EngineBound engine_bound_of_path(const std::string& path) {
  // The GEMVs are both: bandwidth at bf16, arithmetic for the dequantizing formats (the
  // streaming GEMV's CUDA-core math, the tensor-core GEMV's row tiles; H200, 2026-11-25).
  if (path == "gemm" || path.rfind("moe_gemm", 0) == 0 || path.rfind("naive", 0) == 0 ||
      path.rfind("gemv", 0) == 0) {
    return EngineBound::either;
  }
  if (path == "flash_prefill") return EngineBound::compute;
  // The grouped experts' kernels stream each reached expert once and then multiply once a slot
  // on the CUDA cores: on Qwen3-30B-A3B their time keeps growing with the slots after every
  // expert is reached (batch 32 to 64: 24 to 36 ms a step for gate/up, MEASUREMENTS §50).
  if (path == "moe_grouped") return EngineBound::either;
  return EngineBound::memory;
}

bool engine_serial_path(const std::string& path) {
  return path == "gemm" || path.rfind("moe_gemm", 0) == 0 || path == "moe_grouped";
}

double engine_sample_time_s(const EngineKernelSample& sample, const EngineKernelParams& p) {
  double total = 0.0;
  for (const auto& t : sample.terms) {
    total += t.launches * p.t0_s + t.cta_waves * p.cta_fixed_s +
             t.combine_trips * p.combine_trip_s + t.staged_input_kib * p.input_kib_s +
             term_work_s(t, p.compute_efficiency, p.memory_efficiency, p.cta_efficiency,
                         p.serial_fraction);
  }
  return total;
}

EngineKernelParams fit_engine_kernel(const std::vector<EngineKernelSample>& all,
                                     const EngineKernelPrior& prior, EngineBound bound,
                                     bool fit_serial) {
  std::vector<EngineKernelSample> samples;
  bool has_cta = false, has_waves = false;
  // Combine trips per launch, over the samples: a trip's cost is told from t0 only where it
  // varies (samples of one shape leave the two on a line).
  double min_trips = 0.0, max_trips = 0.0;
  // The staged input's KiB per launch (the streaming GEMV's width times its 1-2 rows): told from
  // t0 only where it takes three values or more, so two widths at least. Two values may be the
  // rows alone, which the arithmetic's share (the compute term) grows with too.
  std::set<double> input_per_launch_values;
  for (const auto& s : all) {
    if (s.target_s > 0.0 && std::isfinite(s.target_s)) {
      double launches = 0.0, trips = 0.0, input_kib = 0.0;
      for (const auto& t : s.terms) {
        has_cta |= t.cta_s > 0.0;
        has_waves |= t.cta_waves > 0.0;
        launches += t.launches;
        trips += t.combine_trips;
        input_kib += t.staged_input_kib;
      }
      if (launches > 0.0) input_per_launch_values.insert(input_kib / launches);
      const double per_launch = launches > 0.0 ? trips / launches : 0.0;
      min_trips = samples.empty() ? per_launch : std::min(min_trips, per_launch);
      max_trips = samples.empty() ? per_launch : std::max(max_trips, per_launch);
      samples.push_back(s);
    }
  }
  // A measured trip cost prices trips wherever there are any; a fitted one needs them to vary.
  const bool has_trips = max_trips > min_trips || (prior.combine_trip_s >= 0.0 && max_trips > 0.0);
  EngineKernelParams out;
  out.t0_s = prior.t0_s;
  out.compute_efficiency = prior.compute_efficiency;
  out.memory_efficiency = prior.memory_efficiency;
  if (samples.empty()) return out;
  const bool has_input = input_per_launch_values.size() >= 3;
  const Units units = has_waves   ? Units::waves
                      : has_trips ? Units::trips
                      : has_input ? Units::staged_input
                                  : Units::none;
  const Problem problem{samples, prior, units};
  const double lo = std::log(kMinEfficiency), hi = std::log(kMaxEfficiency);
  // An efficiency not fitted stays at its prior (the per-CTA one at the top of the range, where
  // it never binds): its range is that one value.
  // The serial fraction starts at 0 (the roofline's max) and is fitted only where asked.
  const std::array<bool, kAxes> fitted = {bound != EngineBound::memory,
                                          bound != EngineBound::compute, has_cta, fit_serial};
  const LogEff prior_e = {std::log(prior.compute_efficiency), std::log(prior.memory_efficiency), hi,
                          0.0};
  LogEff e_lo, e_hi;
  for (int a = 0; a < kAxes; ++a) {
    e_lo[a] = fitted[a] ? (a == 3 ? 0.0 : lo) : prior_e[a];
    e_hi[a] = fitted[a] ? (a == 3 ? 1.0 : hi) : prior_e[a];
  }
  // A grid over the fitted log-efficiencies first: the max() makes the loss piecewise, with
  // flat directions where one part never binds, so a local search alone can stall. The
  // per-CTA axis is coarser: it binds only on the few shapes whose CTAs are few or slow.
  const std::array<int, kAxes> steps = {fitted[0] ? kGridSteps : 0, fitted[1] ? kGridSteps : 0,
                                        fitted[2] ? kGridSteps / 4 : 0,
                                        fitted[3] ? kSerialGridSteps : 0};
  LogEff best_e = prior_e;
  Linear best_lin;
  double best = problem.profile_loss(best_e, best_lin);
  for (int i = 0; i <= steps[0]; ++i) {
    for (int j = 0; j <= steps[1]; ++j) {
      for (int k = 0; k <= steps[2]; ++k) {
        for (int l = 0; l <= steps[3]; ++l) {
          const std::array<int, kAxes> idx = {i, j, k, l};
          LogEff e;
          for (int a = 0; a < kAxes; ++a) {
            e[a] = steps[a] > 0 ? e_lo[a] + idx[a] * (e_hi[a] - e_lo[a]) / steps[a] : prior_e[a];
          }
          Linear lin;
          const double loss = problem.profile_loss(e, lin);
          if (loss < best) best = loss, best_e = e, best_lin = lin;
        }
      }
    }
  }
  // Then a compass search from the best grid point, halving its step until it is fine.
  for (double step = (hi - lo) / kGridSteps; step > kFinestStep;) {
    bool moved = false;
    for (int a = 0; a < kAxes && !moved; ++a) {
      if (!fitted[a]) continue;
      for (double sign : {1.0, -1.0}) {
        LogEff e = best_e;
        e[a] = std::clamp(e[a] + sign * step, e_lo[a], e_hi[a]);
        if (e[a] == best_e[a]) continue;
        Linear lin;
        const double l = problem.profile_loss(e, lin);
        if (l < best) {
          best = l, best_e = e, best_lin = lin;
          moved = true;
          break;
        }
      }
    }
    if (!moved) step /= 2.0;
  }
  out.t0_s = best_lin.t0_s;
  if (units == Units::trips) {
    out.combine_trip_s = best_lin.unit_s;
  } else if (units == Units::staged_input) {
    out.input_kib_s = best_lin.unit_s;
  } else {
    out.cta_fixed_s = best_lin.unit_s;
  }
  // exp(log(x)) may land a rounding step outside the range a file is checked against.
  out.compute_efficiency = std::clamp(std::exp(best_e[0]), kMinEfficiency, kMaxEfficiency);
  out.memory_efficiency = std::clamp(std::exp(best_e[1]), kMinEfficiency, kMaxEfficiency);
  out.cta_efficiency =
      has_cta ? std::clamp(std::exp(best_e[2]), kMinEfficiency, kMaxEfficiency) : 0.0;
  out.serial_fraction = fit_serial ? std::clamp(best_e[3], 0.0, 1.0) : 0.0;
  out.points = static_cast<int>(samples.size());
  double ape = 0.0;
  for (const auto& s : samples) ape += std::fabs(engine_sample_time_s(s, out) / s.target_s - 1.0);
  out.mape = ape / static_cast<double>(samples.size());
  return out;
}

}  // namespace inferlab
