#include "engine/quant/gptq_solver.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "engine/quant/quantize.hpp"

namespace inferlab::engine {

namespace {

int clamp_int(double x, int lo, int hi) {
  return static_cast<int>(std::clamp(x, static_cast<double>(lo), static_cast<double>(hi)));
}

// Lower Cholesky factor of the symmetric positive definite n × n matrix `a` (row-major), in
// place; the upper triangle is zeroed. Throws when a pivot is not positive.
void cholesky_lower(std::vector<double>& a, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    double diagonal = a[j * n + j];
    for (int64_t k = 0; k < j; ++k) diagonal -= a[j * n + k] * a[j * n + k];
    if (!(diagonal > 0)) {
      throw std::runtime_error("GPTQ: the damped Hessian is not positive definite at column " +
                               std::to_string(j));
    }
    const double pivot = std::sqrt(diagonal);
    a[j * n + j] = pivot;
    for (int64_t i = j + 1; i < n; ++i) {
      double sum = a[i * n + j];
      for (int64_t k = 0; k < j; ++k) sum -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = sum / pivot;
    }
    for (int64_t k = j + 1; k < n; ++k) a[j * n + k] = 0;
  }
}

// U, upper triangular, with H⁻¹ = Uᵀ U, from H's lower Cholesky factor L (H = L Lᵀ): H⁻¹ =
// L⁻ᵀ L⁻¹, and U = chol_lower(H⁻¹)ᵀ (GPTQ's "Cholesky of the inverse", whose rows give each
// column's error propagation to the columns after it).
std::vector<double> inverse_cholesky_upper(std::vector<double> l, int64_t n) {
  // L⁻¹ by forward substitution, column by column.
  std::vector<double> inv(static_cast<size_t>(n * n), 0.0);
  for (int64_t c = 0; c < n; ++c) {
    for (int64_t i = c; i < n; ++i) {
      double sum = i == c ? 1.0 : 0.0;
      for (int64_t k = c; k < i; ++k) sum -= l[i * n + k] * inv[k * n + c];
      inv[i * n + c] = sum / l[i * n + i];
    }
  }
  // H⁻¹ = L⁻ᵀ L⁻¹: entry (i, j) = Σ_k inv[k][i] inv[k][j], k ≥ max(i, j).
  std::vector<double> h_inv(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j <= i; ++j) {
      double sum = 0;
      for (int64_t k = i; k < n; ++k) sum += inv[k * n + i] * inv[k * n + j];
      h_inv[i * n + j] = h_inv[j * n + i] = sum;
    }
  }
  cholesky_lower(h_inv, n);
  std::vector<double> u(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j <= i; ++j) u[j * n + i] = h_inv[i * n + j];
  }
  return u;
}

}  // namespace

InputHessian::InputHessian(int64_t width)
    : width_(width), h_(static_cast<size_t>(width * width), 0.0) {}

void InputHessian::add(const float* x, int64_t rows) {
  const int64_t n = width_;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * n;
    for (int64_t i = 0; i < n; ++i) {
      const double xi = row[i];
      if (xi == 0) continue;
      double* out = h_.data() + i * n;
      for (int64_t j = 0; j <= i; ++j) out[j] += xi * row[j];
    }
  }
  rows_ += rows;
  // The upper triangle mirrors the lower one (kept filled so callers can read either).
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = i + 1; j < n; ++j) h_[i * n + j] = h_[j * n + i];
  }
}

QuantizedMatrix gptq_quantize(std::vector<float> w, int64_t out, int64_t in,
                              const InputHessian& hessian, const GptqOptions& options) {
  if (out < 1 || in < 1 || static_cast<int64_t>(w.size()) != out * in || hessian.width() != in) {
    throw std::invalid_argument(
        "gptq_quantize: the weights are not [out, in] or the Hessian is "
        "not in × in");
  }
  const bool int4 = options.format == DType::int4;
  if (!int4 && options.format != DType::int8) {
    throw std::invalid_argument("gptq_quantize: int4 or int8 only");
  }
  const int64_t group = int4 ? options.group_size : in;
  if (int4 && (group < 2 || group % 2 != 0 || in % group != 0)) {
    throw std::invalid_argument("gptq_quantize: int4 group size " + std::to_string(group) +
                                " does not divide " + std::to_string(in));
  }
  std::vector<double> h = hessian.values();
  // Inputs that never varied: their columns cannot matter to the outputs; quantized as zeros.
  double mean_diagonal = 0;
  for (int64_t i = 0; i < in; ++i) {
    if (h[i * in + i] == 0) {
      h[i * in + i] = 1;
      for (int64_t o = 0; o < out; ++o) w[o * in + i] = 0;
    }
    mean_diagonal += h[i * in + i] / static_cast<double>(in);
  }
  for (int64_t i = 0; i < in; ++i) h[i * in + i] += options.damp * mean_diagonal;
  cholesky_lower(h, in);
  const std::vector<double> u = inverse_cholesky_upper(std::move(h), in);

  QuantizedMatrix m;
  m.format = options.format;
  m.out = out;
  m.in = in;
  const int64_t groups = in / group;
  if (int4) {
    m.group_size = group;
    m.data.assign(static_cast<size_t>(out * in / 2), 0);
    m.scales.assign(static_cast<size_t>(out * groups), 1.0f);
    m.zeros.assign(static_cast<size_t>(out * groups), 8);
  } else {
    m.data.assign(static_cast<size_t>(out * in), 0);
    m.scales.assign(static_cast<size_t>(out), 1.0f);
    for (int64_t o = 0; o < out; ++o) {  // per channel, from the original row
      float top = 0;
      for (int64_t k = 0; k < in; ++k) top = std::max(top, std::fabs(w[o * in + k]));
      m.scales[o] = top > 0 ? round_to_fp16(top / 127.0f) : 1.0f;
    }
  }
  for (int64_t i = 0; i < in; ++i) {
    const int64_t g = i / group;
    if (int4 && i % group == 0) {  // the group's scales from its weights as they now stand
      for (int64_t o = 0; o < out; ++o) {
        float top = 0;
        for (int64_t k = i; k < i + group; ++k) top = std::max(top, std::fabs(w[o * in + k]));
        m.scales[o * groups + g] = top > 0 ? round_to_fp16(2.0f * top / 15.0f) : 1.0f;
      }
    }
    const double pivot = u[i * in + i];
    const double* spread = u.data() + i * in;
    for (int64_t o = 0; o < out; ++o) {
      float* row = w.data() + o * in;
      const float scale = int4 ? m.scales[o * groups + g] : m.scales[o];
      float dequantized;
      if (int4) {
        const int q = clamp_int(std::nearbyint(row[i] / scale) + 8.0, 0, 15);
        m.data[(o * in + i) / 2] |= static_cast<uint8_t>(q << (4 * (i % 2)));
        dequantized = scale * static_cast<float>(q - 8);
      } else {
        const int q = clamp_int(std::nearbyint(row[i] / scale), -127, 127);
        m.data[o * in + i] = static_cast<uint8_t>(static_cast<int8_t>(q));
        dequantized = scale * static_cast<float>(q);
      }
      // The column's error, carried to the columns not yet quantized.
      const double error = (row[i] - dequantized) / pivot;
      for (int64_t k = i + 1; k < in; ++k) row[k] -= static_cast<float>(error * spread[k]);
    }
  }
  return m;
}

const InputHessian& GptqHessians::of(WeightRole role, int64_t layer) const {
  if (layer < 0 || layer >= static_cast<int64_t>(layers.size())) {
    throw std::invalid_argument("GptqHessians: layer " + std::to_string(layer) + " out of range");
  }
  const auto& hessians = layers[static_cast<size_t>(layer)];
  switch (role) {
    case WeightRole::q_proj:
    case WeightRole::k_proj:
    case WeightRole::v_proj:
      return hessians[static_cast<size_t>(ProjectionInput::qkv)];
    case WeightRole::o_proj:
      return hessians[static_cast<size_t>(ProjectionInput::o)];
    case WeightRole::gate_proj:
    case WeightRole::up_proj:
      return hessians[static_cast<size_t>(ProjectionInput::gate_up)];
    case WeightRole::down_proj:
      return hessians[static_cast<size_t>(ProjectionInput::down)];
    default:
      throw std::invalid_argument("GptqHessians: not a layer projection's role");
  }
}

}  // namespace inferlab::engine
