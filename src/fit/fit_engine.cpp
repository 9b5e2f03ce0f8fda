#include "fit/fit_engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>

#include "cost/engine/engine_cost.hpp"
#include "fit/engine_steps.hpp"
#include "model/engine_blocks.hpp"
#include "predict/step_predictor.hpp"
#include "util/error.hpp"

namespace inferlab {

namespace {

// The step constants' pull towards 0 and the host time's towards a C++ launch (~4 us): weak,
// for data that cannot tell (one step kind, or steps that never wait on the host: the host's
// time shows only where it exceeds a kernel's, so a host faster than every kernel is not
// identified and stays near the prior).
constexpr double kStepConstantScale_s = 1e-4;
constexpr double kHostPrior_s = 4e-6, kHostScale_s = 4e-6, kHostPriorWeight = 1e-4;
constexpr double kStepPriorWeight = 1e-3;
constexpr double kHostGridMax_s = 20e-6, kHostGridStep_s = 0.05e-6;

// A cost model that forwards to one it does not own (the fit's fallback).
class BorrowedCost : public CostModel {
 public:
  explicit BorrowedCost(const CostModel& model) : model_(model) {}
  OpCost price(const Op& op) const override { return model_.price(op); }
  double isolated_time_s(const Op& op) const override { return model_.isolated_time_s(op); }
  std::string name() const override { return model_.name(); }

 private:
  const CostModel& model_;
};

struct FitPoint {
  const EngineProfile* profile;
  const EngineProfilePoint* point;
  const EngineStepSetup* setup;
  std::vector<Op> ops;
  bool graph() const { return point->phase == Phase::decode && profile->switches.cuda_graphs; }
  std::string where() const { return profile->path + " " + point->label(); }
};

// Solves the small symmetric system a x = b in place (Gaussian elimination, partial pivoting).
std::vector<double> solve(std::vector<std::vector<double>> a, std::vector<double> b) {
  const size_t n = b.size();
  for (size_t i = 0; i < n; ++i) {
    size_t pivot = i;
    for (size_t r = i + 1; r < n; ++r) {
      if (std::fabs(a[r][i]) > std::fabs(a[pivot][i])) pivot = r;
    }
    std::swap(a[i], a[pivot]);
    std::swap(b[i], b[pivot]);
    for (size_t r = 0; r < n; ++r) {
      if (r == i || a[i][i] == 0.0) continue;
      const double f = a[r][i] / a[i][i];
      for (size_t c = 0; c < n; ++c) a[r][c] -= f * a[i][c];
      b[r] -= f * b[i];
    }
  }
  std::vector<double> x(n, 0.0);
  for (size_t i = 0; i < n; ++i) x[i] = a[i][i] != 0.0 ? b[i] / a[i][i] : 0.0;
  return x;
}

// Stage 1: step = (sum of the profiled classes) - marks x delta + a constant per step kind,
// in relative least squares over the points that have a profiled pass: the prefills whose calls
// average kernel_bound_call_s or more, when some were profiled (their kernels are long, so the
// host, issuing a call every few microseconds, never holds the GPU back and the profiled pass
// differs from the step by its marks alone); else every prefill, every eager point, every point.
constexpr double kGpuBoundCall_s = 3.0 * kHostPrior_s;

double fit_profile_mark(const std::vector<FitPoint>& all) {
  auto profiled = [](const FitPoint& p) { return !p.point->kernels.empty(); };
  std::vector<FitPoint> points;
  for (auto keep :
       {+[](const FitPoint& p) {
          return p.point->phase == Phase::prefill &&
                 p.point->kernel_seconds() >=
                     kGpuBoundCall_s * static_cast<double>(p.point->kernel_launches());
        },
        +[](const FitPoint& p) { return p.point->phase == Phase::prefill; },
        +[](const FitPoint& p) { return !p.graph(); }, +[](const FitPoint&) { return true; }}) {
    for (const FitPoint& p : all) {
      if (profiled(p) && keep(p)) points.push_back(p);
    }
    if (!points.empty()) break;
  }
  // Unknowns: delta, c_graph, c_eager.
  std::vector<std::vector<double>> a(3, std::vector<double>(3, 0.0));
  std::vector<double> b(3, 0.0);
  bool any = false;
  for (const FitPoint& p : points) {
    if (p.point->kernels.empty()) continue;
    any = true;
    const double s = p.point->step_s;
    // residual = (S - L delta + c - s) / s: coefficients of the unknowns and the constant.
    std::array<double, 3> row = {-static_cast<double>(p.point->kernel_launches()) / s,
                                 p.graph() ? 1.0 / s : 0.0, p.graph() ? 0.0 : 1.0 / s};
    const double constant = p.point->kernel_seconds() / s - 1.0;
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) a[i][j] += row[i] * row[j];
      b[i] -= row[i] * constant;
    }
  }
  if (!any) return 0.0;
  const double ridge = kStepPriorWeight / (kStepConstantScale_s * kStepConstantScale_s);
  a[1][1] += ridge;
  a[2][2] += ridge;
  a[0][0] += kStepPriorWeight / (kStepConstantScale_s * kStepConstantScale_s) * 1e-4;
  return solve(a, b)[0];
}

// The tensor cores' clock at each point (EngineCosts::matrix_clock_gain): its duty, the share
// of its measured class time in classes whose ops `cost` prices as compute-bound tensor-core
// kernels; none yet (gain 0) while the kernels are first fitted.
struct ClockAtPoints {
  double gain = 0.0;
  std::vector<double> duty;  // by point
};

// Stage 2: the samples of each (class, path, format) key.
std::map<std::string, std::vector<EngineKernelSample>> class_samples(
    const std::vector<FitPoint>& points, const EngineCeilings& ceilings, double mark_s,
    std::vector<std::string>& notes, const ClockAtPoints& clock = {}) {
  std::map<std::string, std::vector<EngineKernelSample>> by_key;
  for (size_t i = 0; i < points.size(); ++i) {
    const FitPoint& p = points[i];
    const double clock_factor =
        clock.gain > 0.0 ? engine_clock_factor(clock.gain, clock.duty[i]) : 1.0;
    if (p.point->kernels.empty()) continue;
    for (const auto& measured : p.point->kernels) {
      const auto ops = ops_of_class(p.ops, measured.kernel);
      if (ops.empty()) {
        notes.push_back(
            fmt::format("{}: class {} measured ({:.3f} ms) but the kernel list has "
                        "no op in it; not fitted",
                        p.where(), measured.kernel, measured.seconds * 1e3));
        continue;
      }
      const int64_t marks = predicted_marks(ops);
      if (marks != measured.launches) {
        notes.push_back(fmt::format("{}: class {}: the profile counts {} calls, the kernel list {}",
                                    p.where(), measured.kernel, measured.launches, marks));
      }
      EngineKernelSample sample;
      sample.target_s = measured.seconds - mark_s * static_cast<double>(measured.launches);
      if (!(sample.target_s > 0.0)) {
        notes.push_back(
            fmt::format("{}: class {}: {:.4f} ms is no more than its profile marks; "
                        "not fitted",
                        p.where(), measured.kernel, measured.seconds * 1e3));
        continue;
      }
      std::string key;
      for (const Op* op : ops) {
        if (key.empty() || op->tag.marks > 0) key = engine_kernel_key(op->tag);
        const double n = static_cast<double>(op->count);
        const double clock = engine_tensor_core_op(*op) ? clock_factor : 1.0;
        sample.terms.push_back(
            {n * std::max(1, op->kernels), n * op->flops / engine_op_peak(*op, ceilings) * clock,
             n * op->bytes() / ceilings.memory_bandwidth_bps,
             n * engine_cta_stream_s(*op, ceilings), n * engine_cta_waves(*op, ceilings),
             n * static_cast<double>(engine_combine_extra_trips(*op, ceilings)),
             n * std::max(1, op->kernels) * engine_staged_input_kib(*op)});
      }
      by_key[key].push_back(std::move(sample));
    }
    for (const char* cls : kEngineKernelClasses) {
      bool measured = false;
      for (const auto& k : p.point->kernels) measured |= k.kernel == cls;
      if (!measured && !ops_of_class(p.ops, cls).empty()) {
        notes.push_back(fmt::format("{}: the kernel list launches class {}, the profile has none",
                                    p.where(), cls));
      }
    }
  }
  return by_key;
}

struct StepFit {
  double graph_per_kernel_s = 0.0, graph_step_s = 0.0, eager_step_s = 0.0, host_per_kernel_s = 0.0;
  double graph_programmatic_per_kernel_s = 0.0;
  // The host times whose eager steps fit within kHostTolerance of the best (the prior's pull
  // left out): how well the data pin host_per_kernel_s down. Both -1 without eager steps.
  double host_fits_from_s = -1.0, host_fits_to_s = -1.0;
};

// A host time whose eager steps' squared relative error is within this fraction of the best one's
// fits them as well: noise in the profiles moves the fit anywhere in that range.
constexpr double kHostTolerance = 0.01;
// A range of host times that fit wider than this is reported as not identified.
constexpr double kHostUnidentifiedWidth_s = 2e-6;

void set_step_constants(const StepFit& steps, EngineCosts& costs) {
  costs.graph_per_kernel_s = steps.graph_per_kernel_s;
  costs.graph_step_s = steps.graph_step_s;
  costs.graph_programmatic_per_kernel_s = steps.graph_programmatic_per_kernel_s;
  costs.eager_step_s = steps.eager_step_s;
  costs.host_per_kernel_s = steps.host_per_kernel_s;
}

// "class/path/format" -> "path".
std::string path_of_key(const std::string& key) {
  return key.substr(key.find('/') + 1, key.rfind('/') - key.find('/') - 1);
}

struct GraphStep {
  double gpu_s, kernels, programmatic, step_s;
};

// Graph steps: step = gpu + kernels x g + programmatic kernels x g_p + c, (g, g_p, c) by
// relative least squares with a weak pull of each towards 0 (g, g_p in units of a
// microsecond). Without programmatic kernels in the data g_p stays 0 and (g, c) come out as
// they did before it existed.
void fit_graph_constants(const std::vector<GraphStep>& steps, StepFit& fit) {
  bool programmatic = false;
  for (const GraphStep& s : steps) programmatic = programmatic || s.programmatic > 0.0;
  const int n = programmatic ? 3 : 2;
  std::vector<std::vector<double>> a(n, std::vector<double>(n, 0.0));
  std::vector<double> b(n, 0.0);
  for (const GraphStep& s : steps) {
    const double row[3] = {s.kernels / s.step_s, 1.0 / s.step_s, s.programmatic / s.step_s};
    const double constant = s.gpu_s / s.step_s - 1.0;
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) a[i][j] += row[i] * row[j];
      b[i] -= row[i] * constant;
    }
  }
  a[0][0] += kStepPriorWeight / (1e-6 * 1e-6);
  a[1][1] += kStepPriorWeight / (kStepConstantScale_s * kStepConstantScale_s);
  if (programmatic) a[2][2] += kStepPriorWeight / (1e-6 * 1e-6);
  const auto x = solve(a, b);
  fit.graph_per_kernel_s = x[0];
  fit.graph_step_s = x[1];
  fit.graph_programmatic_per_kernel_s = programmatic ? x[2] : 0.0;
}

// Closed-form constant c minimising sum ((pred + c) / s - 1)^2 + ridge.
double best_constant(const std::vector<std::pair<double, double>>& pred_and_step) {
  double num = 0.0, den = kStepPriorWeight / (kStepConstantScale_s * kStepConstantScale_s);
  for (auto [pred, s] : pred_and_step) {
    num += (1.0 / s) * (1.0 - pred / s);
    den += 1.0 / (s * s);
  }
  return num / den;
}

// Stage 3: the step constants and the host time per eager launch, with the kernels priced.
StepFit fit_step_constants(const std::vector<FitPoint>& points, const CostModel& cost) {
  StepFit fit;
  std::vector<GraphStep> graph;
  std::vector<std::pair<StepPrediction, double>> eager;
  std::vector<int64_t> eager_layers;
  for (const FitPoint& p : points) {
    // gpu_s; the eager replay is done here for each host time
    StepPrediction step = predict_engine_step(*p.setup, *p.point, cost, /*cuda_graphs=*/true);
    if (p.graph()) {
      graph.push_back({step.gpu_s, static_cast<double>(step.kernels),
                       static_cast<double>(step.programmatic_kernels), p.point->step_s});
    } else {
      eager.emplace_back(std::move(step), p.point->step_s);
      eager_layers.push_back(p.setup->model.num_layers);
    }
  }
  if (!graph.empty()) fit_graph_constants(graph, fit);
  if (eager.empty()) return fit;
  double best_loss = 0.0;
  bool first = true;
  std::vector<std::pair<double, double>> data_loss_at;  // (host time, the steps' loss alone)
  for (double h = 0.0; h <= kHostGridMax_s + 1e-12; h += kHostGridStep_s) {
    std::vector<std::pair<double, double>> replayed;
    for (size_t i = 0; i < eager.size(); ++i) {
      replayed.emplace_back(replay_launch_queue(eager[i].first.ops, eager_layers[i], h),
                            eager[i].second);
    }
    const double c = best_constant(replayed);
    double data_loss = 0.0;
    for (auto [pred, s] : replayed) data_loss += std::pow((pred + c) / s - 1.0, 2);
    data_loss_at.emplace_back(h, data_loss);
    const double loss =
        data_loss + kHostPriorWeight * std::pow((h - kHostPrior_s) / kHostScale_s, 2);
    if (first || loss < best_loss) {
      first = false;
      best_loss = loss;
      fit.host_per_kernel_s = h;
      fit.eager_step_s = c;
    }
  }
  double best_data_loss = data_loss_at.front().second;
  for (const auto& [h, l] : data_loss_at) best_data_loss = std::min(best_data_loss, l);
  for (const auto& [h, l] : data_loss_at) {
    if (l > best_data_loss * (1.0 + kHostTolerance)) continue;
    if (fit.host_fits_from_s < 0.0) fit.host_fits_from_s = h;
    fit.host_fits_to_s = h;
  }
  return fit;
}

// The step's ops, each class's ops scaled to the class's measured time less its profile marks:
// the step as measured, in the model's launch order.
std::vector<PricedOp> measured_ops(const StepPrediction& step, const EngineProfilePoint& point,
                                   double mark_s) {
  std::vector<PricedOp> ops = step.ops;
  for (const auto& measured : point.kernels) {
    double model_s = 0.0;
    for (const auto& p : ops) {
      if (measured.kernel == p.op.tag.kernel_class) model_s += p.total_s();
    }
    const double target_s = measured.seconds - mark_s * static_cast<double>(measured.launches);
    if (!(model_s > 0.0) || !(target_s > 0.0)) continue;
    for (auto& p : ops) {
      if (measured.kernel == p.op.tag.kernel_class) p.cost.time_s *= target_s / model_s;
    }
  }
  return ops;
}

// Stage 1 again, once the host's time per launch is known: the profile mark that makes the
// profiled eager points' classes, replayed through the launch queue, give their measured steps
// (a grid around the first estimate; the eager step constant in closed form for each).
double refine_profile_mark(const std::vector<FitPoint>& points, const CostModel& cost,
                           const EngineCosts& costs) {
  std::vector<std::pair<const FitPoint*, StepPrediction>> eager;
  for (const FitPoint& p : points) {
    if (p.graph() || p.point->kernels.empty()) continue;
    // cuda_graphs: the in-stream ops
    eager.emplace_back(&p, predict_engine_step(*p.setup, *p.point, cost, /*cuda_graphs=*/true));
  }
  if (eager.empty()) return costs.profile_mark_s;
  double best_mark = costs.profile_mark_s, best_loss = 0.0;
  bool first = true;
  for (int i = -300; i <= 300; ++i) {
    const double mark_s = costs.profile_mark_s + i * 0.01e-6;
    std::vector<std::pair<double, double>> replayed;
    for (const auto& [p, step] : eager) {
      replayed.emplace_back(
          replay_launch_queue(measured_ops(step, *p->point, mark_s), p->setup->model.num_layers,
                              costs.host_per_kernel_s),
          p->point->step_s);
    }
    const double c = best_constant(replayed);
    double loss = 0.0;
    for (auto [pred, s] : replayed) loss += std::pow((pred + c) / s - 1.0, 2);
    if (first || loss < best_loss) first = false, best_loss = loss, best_mark = mark_s;
  }
  return best_mark;
}

nlohmann::json step_summary(const std::vector<FitPoint>& points, const CostModel& cost) {
  std::map<std::string, std::pair<int, double>> by_phase;
  for (const FitPoint& p : points) {
    const double predicted = predict_engine_step(*p.setup, *p.point, cost, p.graph()).time_s;
    auto& [n, ape] = by_phase[p.point->phase == Phase::prefill ? "prefill" : "decode"];
    ++n;
    ape += std::fabs(predicted / p.point->step_s - 1.0);
  }
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [phase, v] : by_phase) {
    out[phase] = {{"points", v.first}, {"mape", v.second / v.first}};
  }
  return out;
}

std::vector<double> measured_tensor_core_duty(const std::vector<FitPoint>& points,
                                              const CostModel& cost) {
  std::vector<double> duty;
  for (const FitPoint& p : points) {
    std::map<std::string, bool> busy;  // class -> has a compute-bound tensor-core op
    for (const Op& op : p.ops) {
      const bool tc = engine_tensor_core_op(op) && cost.price(op).bound == Bound::compute;
      busy[op.tag.kernel_class] = busy[op.tag.kernel_class] || tc;
    }
    double busy_s = 0.0, all_s = 0.0;
    for (const auto& k : p.point->kernels) {
      all_s += k.seconds;
      if (busy[k.kernel]) busy_s += k.seconds;
    }
    duty.push_back(all_s > 0.0 ? busy_s / all_s : 0.0);
  }
  return duty;
}

// The keys of tensor-core kernels refitted at `clock`; their summed loss (squared relative
// errors) over their samples, and how many samples.
struct ClockLoss {
  double loss = 0.0;
  int samples = 0;
};
ClockLoss refit_tensor_core_keys(const std::vector<FitPoint>& points, EngineCosts& costs,
                                 const EngineKernelPrior& prior, const ClockAtPoints& clock) {
  std::vector<std::string> unused_notes;
  const auto samples =
      class_samples(points, costs.ceilings, costs.profile_mark_s, unused_notes, clock);
  ClockLoss out;
  for (const auto& [key, list] : samples) {
    const std::string path = path_of_key(key);
    if (!engine_tensor_core_path(path)) continue;
    const EngineKernelParams params =
        fit_engine_kernel(list, prior, engine_bound_of_path(path), engine_serial_path(path));
    costs.kernels[key] = params;
    for (const auto& s : list) {
      if (!(s.target_s > 0.0)) continue;
      out.loss += std::pow(engine_sample_time_s(s, params) / s.target_s - 1.0, 2);
      ++out.samples;
    }
  }
  return out;
}

// Stage 4: the clock gain, by its loss over the tensor-core keys on a grid of gains; kept only
// where it lowers their mean squared relative error by kMinClockGainGain (about a point of rms
// error), else 0: steps of one kind cannot tell it from the efficiencies.
constexpr double kMaxClockGain = 0.3, kClockGainStep = 0.01, kMinClockGainGain = 1e-4;

double fit_clock_gain(const std::vector<FitPoint>& points, EngineCosts& costs,
                      const EngineKernelPrior& prior, const CostModel& fallback) {
  ClockAtPoints clock;
  {
    const EngineCostModel priced(costs, std::make_unique<BorrowedCost>(fallback));
    clock.duty = measured_tensor_core_duty(points, priced);
  }
  double best_gain = 0.0, best_loss = 0.0, no_gain_loss = 0.0;
  int samples = 0;
  for (int i = 0; i * kClockGainStep <= kMaxClockGain + 1e-12; ++i) {
    clock.gain = i * kClockGainStep;
    EngineCosts trial = costs;
    const ClockLoss l = refit_tensor_core_keys(points, trial, prior, clock);
    if (i == 0) no_gain_loss = l.loss, samples = l.samples;
    if (i == 0 || l.loss < best_loss) best_loss = l.loss, best_gain = clock.gain;
  }
  if (samples == 0 || no_gain_loss - best_loss < kMinClockGainGain * samples) best_gain = 0.0;
  clock.gain = best_gain;
  refit_tensor_core_keys(points, costs, prior, clock);
  return best_gain;
}

// The fit split's points of `profiles` with their kernel lists; held-out points only counted.
std::vector<FitPoint> fit_split_points(const std::vector<EngineProfile>& profiles,
                                       EngineSetupCache& setups, int& held_out) {
  std::vector<FitPoint> points;
  for (const EngineProfile& profile : profiles) {
    for (const EngineProfilePoint& point : profile.points) {
      if (point.held_out) {
        ++held_out;
        continue;
      }
      const EngineStepSetup& setup = setups.of(profile);
      points.push_back({&profile, &point, &setup, engine_point_ops(setup, point)});
    }
  }
  if (points.empty()) {
    throw InputError("the engine profiles have no point in the fit split to fit");
  }
  return points;
}

std::vector<std::string> profile_paths(const std::vector<EngineProfile>& profiles) {
  std::vector<std::string> files;
  for (const auto& p : profiles) files.push_back(p.path);
  return files;
}

}  // namespace

EngineFit extend_engine_costs(const EngineCosts& base, const std::vector<EngineProfile>& profiles,
                              const HardwareSpec& hw, const CostModel& fallback,
                              const EngineKernelPrior& prior) {
  EngineFit fit;
  fit.costs = base;
  EngineSetupCache setups(hw);
  const std::vector<FitPoint> points = fit_split_points(profiles, setups, fit.held_out_points);
  fit.fit_points = static_cast<int>(points.size());
  // The tensor cores' clock at each point as base prices it (base's keys, the fallback for the
  // kernels it lacks), as the full fit's last stage has it.
  ClockAtPoints clock;
  clock.gain = base.matrix_clock_gain;
  if (clock.gain > 0.0) {
    const EngineCostModel priced(base, std::make_unique<BorrowedCost>(fallback));
    clock.duty = measured_tensor_core_duty(points, priced);
  }
  const auto samples = class_samples(points, base.ceilings, base.profile_mark_s, fit.notes, clock);
  std::vector<std::string> added;
  for (const auto& [key, list] : samples) {
    if (base.kernels.count(key) != 0) continue;
    const std::string path = path_of_key(key);
    fit.costs.kernels[key] =
        fit_engine_kernel(list, prior, engine_bound_of_path(path), engine_serial_path(path));
    fit.class_samples += static_cast<int>(list.size());
    added.push_back(key);
  }
  if (added.empty()) {
    throw InputError("fit --engine --base: these profiles measure no kernel the base lacks");
  }
  const EngineCostModel fitted(fit.costs, std::make_unique<BorrowedCost>(fallback));
  nlohmann::json extension = {{"files", profile_paths(profiles)},
                              {"keys", added},
                              {"fit_points", fit.fit_points},
                              {"held_out_points_not_used", fit.held_out_points},
                              {"class_samples", fit.class_samples},
                              {"fit_steps", step_summary(points, fitted)},
                              {"notes", fit.notes}};
  if (!fit.costs.fit_summary.is_object()) fit.costs.fit_summary = nlohmann::json::object();
  nlohmann::json& extensions = fit.costs.fit_summary["extensions"];
  if (!extensions.is_null() && !extensions.is_array()) {
    throw InputError("fit --engine --base: the base's fit.extensions is not a list");
  }
  extensions.push_back(std::move(extension));
  return fit;
}

EngineFit fit_engine_costs(const std::vector<EngineProfile>& profiles, const HardwareSpec& hw,
                           const CostModel& fallback, const EngineKernelPrior& prior) {
  EngineFit fit;
  fit.costs.hardware = hw.name;
  fit.costs.ceilings = engine_ceilings_of(hw);
  // The fit split only, from here on: nothing of a held-out point (its times included) is read.
  EngineSetupCache setups(hw);
  const std::vector<FitPoint> points = fit_split_points(profiles, setups, fit.held_out_points);
  fit.fit_points = static_cast<int>(points.size());
  fit.costs.profile_mark_s = fit_profile_mark(points);
  // Two rounds: the second refines the profile mark with the host time the first found (small
  // prefills and eager decodes wait on the host between kernels, which the mark alone does not
  // explain), then refits the kernels and the step constants.
  StepFit steps;  // the last fit of the step constants, on the costs as they end up
  for (int round = 0; round < 2; ++round) {
    if (round == 1) {
      const EngineCostModel priced(fit.costs, std::make_unique<BorrowedCost>(fallback));
      fit.costs.profile_mark_s = refine_profile_mark(points, priced, fit.costs);
    }
    fit.notes.clear();
    fit.class_samples = 0;
    fit.costs.kernels.clear();
    const auto samples =
        class_samples(points, fit.costs.ceilings, fit.costs.profile_mark_s, fit.notes);
    for (const auto& [key, list] : samples) {
      const std::string path = path_of_key(key);
      fit.costs.kernels[key] =
          fit_engine_kernel(list, prior, engine_bound_of_path(path), engine_serial_path(path));
      fit.class_samples += static_cast<int>(list.size());
    }
    const EngineCostModel priced(fit.costs, std::make_unique<BorrowedCost>(fallback));
    steps = fit_step_constants(points, priced);
    set_step_constants(steps, fit.costs);
  }
  // The tensor cores' clock last, on the kernels as fitted, then the step constants again.
  fit.costs.matrix_clock_gain = fit_clock_gain(points, fit.costs, prior, fallback);
  if (fit.costs.matrix_clock_gain > 0.0) {
    const EngineCostModel priced(fit.costs, std::make_unique<BorrowedCost>(fallback));
    steps = fit_step_constants(points, priced);
    set_step_constants(steps, fit.costs);
  }
  // Whether the eager steps pin the host's time down (they do only where they wait on it).
  if (steps.host_fits_to_s - steps.host_fits_from_s > kHostUnidentifiedWidth_s) {
    fit.notes.push_back(fmt::format(
        "the host's time per eager launch is not identified by these profiles: their eager "
        "steps fit within {:.0f}% of the best from {:.2f} to {:.2f} us a launch (fitted "
        "{:.2f} us); steps that wait on the host (small models' prefills, eager decodes) "
        "would tell it",
        100.0 * kHostTolerance, steps.host_fits_from_s * 1e6, steps.host_fits_to_s * 1e6,
        fit.costs.host_per_kernel_s * 1e6));
  }
  const EngineCostModel fitted(fit.costs, std::make_unique<BorrowedCost>(fallback));
  fit.costs.fit_summary = {{"files", profile_paths(profiles)},
                           {"fit_points", fit.fit_points},
                           {"held_out_points_not_used", fit.held_out_points},
                           {"class_samples", fit.class_samples},
                           {"fit_steps", step_summary(points, fitted)},
                           {"notes", fit.notes}};
  fit.costs.source = fmt::format(
      "{} fit points of {} engine profiles ({} held-out points not used), against "
      "{}",
      fit.fit_points, profiles.size(), fit.held_out_points, fit.costs.ceilings.source);
  return fit;
}

}  // namespace inferlab
