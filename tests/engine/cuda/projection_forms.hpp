#pragma once
// One projection form run through a Projector and checked against the CPU reference: the
// shared body of projection_test.cpp and projection_shapes_test.cpp. CUDA builds only.
#include <algorithm>
#include <string>
#include <vector>

#include "projection_test_support.hpp"

namespace inferlab::engine::projection_test {

enum class Form { store, store_fp32, bias, residual_add, swiglu, norm, norm_swiglu };

inline const char* form_name(Form form) {
  switch (form) {
    case Form::store:
      return "store";
    case Form::store_fp32:
      return "store-fp32";
    case Form::bias:
      return "bias";
    case Form::residual_add:
      return "residual-add";
    case Form::swiglu:
      return "swiglu";
    case Form::norm:
      return "norm";
    case Form::norm_swiglu:
      return "norm+swiglu";
  }
  return "?";
}

inline bool fused(Form form) {
  return form == Form::residual_add || form == Form::swiglu || form == Form::norm ||
         form == Form::norm_swiglu;
}

struct FormRun {
  std::vector<uint32_t> bits;  // raw output (bf16 widened to 32 bits, or fp32 bits)
  cuda::ProjectionPath path = cuda::ProjectionPath::none;
};

// Runs `form` of `rows` rows on `w` (host copy `m`) and checks it. The GEMV takes it when the
// projector says so; fused forms need that. `features`: the reference checks these outputs
// (all when empty). Returns the path taken.
inline cuda::ProjectionPath check_form(Projector& projector, const Format& format,
                                       const HostMatrix& m, const DeviceMatrix& w, int64_t rows,
                                       Form form, uint64_t seed,
                                       const std::vector<int64_t>& features = {}) {
  const int64_t in = m.in, out = m.out;
  const bool swiglu = form == Form::swiglu || form == Form::norm_swiglu;
  const bool norm = form == Form::norm || form == Form::norm_swiglu;
  const bool with_bias = form == Form::bias || (swiglu && seed % 2 == 0);
  const int64_t width = swiglu ? out / 2 : out;  // outputs per row
  const std::string what = std::string(format.name) + " " + form_name(form) + " rows " +
                           std::to_string(rows) + " " + std::to_string(out) + "x" +
                           std::to_string(in);
  SCOPED_TRACE(what);

  const HostRows x = make_host_rows(rows, in, seed, norm ? 3.0f : 1.0f);
  auto dx = to_device(x.bits);
  const auto bias_bits =
      with_bias ? random_bf16_bits(out, seed + 1, 0.0f, 0.5f) : std::vector<uint16_t>{};
  auto dbias = to_device(bias_bits);
  const std::vector<float> bias = widen(bias_bits);

  // The reference's input: x, or layer_kernels' RMSNorm of it (the GEMV's prologue computes
  // the same bits), then quantized per row for fp8 / W8A8.
  std::vector<float> input = x.values;
  const auto norm_bits = random_bf16_bits(in, seed + 2, 1.0f, 0.5f);
  auto dnorm = to_device(norm_bits);
  const float eps = 1e-5f;
  if (norm) {
    DeviceBuffer<bf16> normed(static_cast<size_t>(rows * in));
    cuda::rms_norm(dx.data(), dnorm.data(), static_cast<int>(rows), static_cast<int>(in), eps,
                   normed.data(), nullptr);
    input = widen(download_bits(normed, static_cast<size_t>(rows * in)));
  }
  const std::vector<double> effective = effective_input(input, rows, in, format.input);

  // Exact sums of the checked outputs (for SwiGLU, gate rows i and up rows I + i).
  std::vector<int64_t> outputs = features;
  if (outputs.empty()) {
    for (int64_t i = 0; i < width; ++i) outputs.push_back(i);
  }
  std::vector<int64_t> rows_needed = outputs;
  if (swiglu) {
    for (int64_t i : outputs) rows_needed.push_back(width + i);
  }
  const ExactSums sums = exact_sums(m, effective, rows, bias, rows_needed);
  const size_t n = outputs.size();

  const auto residual_bits = random_bf16_bits(static_cast<size_t>(rows * out), seed + 3, 0, 2);
  const bool fp32 = form == Form::store_fp32;
  const size_t count = static_cast<size_t>(rows * width);
  DeviceBuffer<unsigned char> y(count * (fp32 ? 4 : 2));
  DeviceBuffer<bf16> residual(static_cast<size_t>(rows * out));

  auto run = [&] {
    FormRun result;
    INFERLAB_CUDA_CHECK(cudaMemset(y.data(), 0xff, y.bytes()));  // poison: NaN in bf16 and fp32
    residual.upload(reinterpret_cast<const bf16*>(residual_bits.data()), residual_bits.size());
    if (!fused(form)) {
      projector.linear(dx.data(), rows, w, with_bias ? dbias.data() : nullptr, y.data(), fp32,
                       nullptr);
    } else {
      cuda::GemvFused args;
      args.x = dx.data();
      args.norm_weight = norm ? dnorm.data() : nullptr;
      args.eps = eps;
      args.epilogue = form == Form::residual_add ? cuda::GemvFused::Epilogue::residual_add
                      : swiglu                   ? cuda::GemvFused::Epilogue::swiglu
                                                 : cuda::GemvFused::Epilogue::store;
      args.bias = with_bias ? dbias.data() : nullptr;
      args.y = reinterpret_cast<bf16*>(y.data());
      args.residual = residual.data();
      projector.gemv_fused(args, rows, w, nullptr);
    }
    INFERLAB_CUDA_CHECK(cudaDeviceSynchronize());
    result.path = projector.last_path();
    if (form == Form::residual_add) {
      const auto bits = download_bits(residual, residual_bits.size());
      result.bits.assign(bits.begin(), bits.end());
    } else if (fp32) {
      result.bits.resize(count);
      INFERLAB_CUDA_CHECK(
          cudaMemcpy(result.bits.data(), y.data(), count * 4, cudaMemcpyDeviceToHost));
    } else {
      std::vector<uint16_t> bits(count);
      INFERLAB_CUDA_CHECK(cudaMemcpy(bits.data(), y.data(), count * 2, cudaMemcpyDeviceToHost));
      result.bits.assign(bits.begin(), bits.end());
    }
    return result;
  };
  const FormRun first = run(), second = run();
  EXPECT_TRUE(first.bits == second.bits) << "not bit-reproducible";
  // Every element written (the poison is NaN), checked or not.
  int64_t unwritten = 0;
  for (uint32_t b : first.bits) {
    const bool nan = fp32 ? (b & 0x7fffffffu) > 0x7f800000u : (b & 0x7fffu) > 0x7f80u;
    unwritten += nan ? 1 : 0;
  }
  EXPECT_EQ(unwritten, 0) << "outputs left unwritten (or NaN)";

  const bool stream = first.path == cuda::ProjectionPath::gemv_stream;
  const bool gemv = stream || first.path == cuda::ProjectionPath::gemv ||
                    first.path == cuda::ProjectionPath::gemv_prepared;
  if (fused(form)) {
    EXPECT_TRUE(gemv) << "fused forms run on the GEMV";
  }
  const bool bf16_weights = !gemv && format.input == DType::bf16 && format.weights != DType::bf16;
  const double accumulation = kAccumulation + (bf16_weights ? kBf16Weights : 0.0);

  auto value = [&](int64_t r, size_t i) -> double {
    const size_t at =
        static_cast<size_t>(r * (form == Form::residual_add ? out : width) + outputs[i]);
    if (fp32) {
      float f;
      std::memcpy(&f, &first.bits[at], 4);
      return f;
    }
    return bf16_to_float(static_cast<uint16_t>(first.bits[at]));
  };
  auto y_exact = [&](int64_t r, size_t i) { return sums.at(r, i); };
  auto err = [&](int64_t r, size_t i) { return accumulation * sums.mag(r, i); };
  const bool fp8_tensor_cores = !gemv && format.weights == DType::fp8;
  // Few outputs: the bf16 roundings' worst case rather than their typical norm error
  // (projection_test_support.hpp).
  const bool few = rows * width < kFewOutputs;
  const double store_limit = std::max(bf16_weights       ? kBf16WeightsLimit
                                      : fp8_tensor_cores ? kFp8TensorCoreLimit
                                                         : kStoreLimit,
                                      few ? kFewStoreLimit : 0.0);
  const bool stream_fp16_sums = stream && format.weights != DType::bf16;
  const double rounded_limit = bf16_weights       ? kBf16WeightsLimit
                               : fp8_tensor_cores ? kFp8TensorCoreLimit
                               : stream_fp16_sums
                                   ? (swiglu ? kStreamSwigluRoundedLimit : kStreamRoundedLimit)
                                   : kRoundedLimit;
  const double fp32_limit = bf16_weights || fp8_tensor_cores          ? kFp8TensorCoreLimit
                            : stream && format.weights != DType::bf16 ? kStreamFp32Limit
                                                                      : kFp32Limit;
  constexpr double kUlp = 1.0 / 256;  // twice bf16's relative rounding error

  if (form == Form::residual_add) {
    auto res = [&](int64_t r, size_t i) {
      return static_cast<double>(bf16_to_float(residual_bits[r * out + outputs[i]]));
    };
    compare(
        what, rows, n, value, [&](int64_t r, size_t i) { return res(r, i) + y_exact(r, i); },
        [&](int64_t r, size_t i) {
          return static_cast<double>(round_bf16(
              static_cast<float>(res(r, i) + round_bf16(static_cast<float>(y_exact(r, i))))));
        },
        [&](int64_t r, size_t i) {
          return err(r, i) + kUlp * (std::abs(y_exact(r, i)) + std::abs(res(r, i) + y_exact(r, i)));
        },
        kTwoRoundingsLimit, rounded_limit);
  } else if (swiglu) {
    auto gate = [&](int64_t r, size_t i) { return sums.at(r, i); };
    auto up = [&](int64_t r, size_t i) { return sums.at(r, n + i); };
    compare(
        what, rows, n, value, [&](int64_t r, size_t i) { return silu(gate(r, i)) * up(r, i); },
        [&](int64_t r, size_t i) {
          const float g = round_bf16(static_cast<float>(gate(r, i)));
          const float s = round_bf16(g / (1.0f + std::exp(-g)));
          return static_cast<double>(round_bf16(s * round_bf16(static_cast<float>(up(r, i)))));
        },
        [&](int64_t r, size_t i) {
          // |silu'| ≤ 1.1; g and u each off by their accumulation error and a rounding, silu
          // and the product rounded once more.
          const double eg = accumulation * sums.mag(r, i) + kUlp * std::abs(gate(r, i));
          const double eu = accumulation * sums.mag(r, n + i) + kUlp * std::abs(up(r, i));
          const double a = std::abs(silu(gate(r, i)) * up(r, i));
          return 1.1 * eg * (std::abs(up(r, i)) + eu) +
                 (std::abs(silu(gate(r, i))) + 1.1 * eg) * eu + 2 * kUlp * a + 1e-30;
        },
        few ? kFewSwigluLimit : kSwigluLimit, rounded_limit);
  } else if (fp32) {
    compare(
        what, rows, n, value, y_exact, y_exact,
        [&](int64_t r, size_t i) { return err(r, i) + 1e-30; }, fp32_limit, fp32_limit);
  } else {
    compare(
        what, rows, n, value, y_exact,
        [&](int64_t r, size_t i) {
          return static_cast<double>(round_bf16(static_cast<float>(y_exact(r, i))));
        },
        [&](int64_t r, size_t i) { return err(r, i) + kUlp * std::abs(y_exact(r, i)) + 1e-30; },
        store_limit, rounded_limit);
  }
  return first.path;
}

}  // namespace inferlab::engine::projection_test
