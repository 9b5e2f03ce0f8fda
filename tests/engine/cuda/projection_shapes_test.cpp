// The Projector at Llama 3 8B's shapes (fused QKV 4096→6144, down 14336→4096, fused gate/up
// 4096→2·14336) in every weight format, on the GEMV (decode rows, fused forms) and the tensor
// cores (prefill rows), checked on a sample of outputs against the CPU reference
// (projection_reference.hpp; tolerances in projection_test.cpp); and the two paths against
// each other at the GEMV's row limit. Without a GPU the tests skip.
#include <gtest/gtest.h>

#include "engine/cuda_backend.hpp"

#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include <vector>

#include "projection_forms.hpp"

namespace inferlab::engine {
namespace {

using namespace projection_test;

#define REQUIRE_GPU() \
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU"

struct RealShape {
  const char* name;
  int64_t out, in;
  std::vector<Form> decode_forms;  // on the GEMV
};
const std::vector<RealShape> kShapes = {
    {"qkv", 6144, 4096, {Form::store, Form::bias, Form::norm, Form::store_fp32}},
    {"down", 4096, 14336, {Form::residual_add, Form::store}},
    {"gate_up", 28672, 4096, {Form::norm_swiglu, Form::swiglu}},
};

TEST(CudaProjectionShapes, Llama3_8bShapesMatchTheReference) {
  REQUIRE_GPU();
  uint64_t seed = 7000;
  for (const Format& format : formats()) {
    Projector projector(300, 14336, 28672, format.weights, format.input);
    projector.set_gemv_stream(false);  // the tensor-core GEMV under test
    for (const RealShape& shape : kShapes) {
      const HostMatrix m =
          make_host_matrix(format.weights, shape.out, shape.in, format.group_size, seed++);
      DeviceCopy d;
      upload(m, format.input, &d);
      const int64_t width = shape.decode_forms[0] == Form::norm_swiglu ? shape.out / 2 : shape.out;
      const std::vector<int64_t> sample = sample_features(width);
      projector.set_gemv_max_rows(cuda::kProjectionGemvMaxRows);  // bf16 defaults to cuBLASLt
      for (int64_t rows : {1, 5, 16, 17, 32}) {
        ASSERT_TRUE(projector.takes_gemv(rows, d.view)) << format.name << " " << shape.name;
        for (Form form : shape.decode_forms) {
          check_form(projector, format, m, d.view, rows, form, seed++, sample);
        }
      }
      // Prefill rows on the tensor cores; 17 rows there too, for the agreement below.
      projector.set_gemv(false);
      if (shape.decode_forms[0] != Form::norm_swiglu) {
        for (int64_t rows : {17, 64, 300}) {
          check_form(projector, format, m, d.view, rows, Form::bias, seed++, sample);
        }
      } else {
        for (int64_t rows : {17, 300}) {
          check_form(projector, format, m, d.view, rows, Form::store, seed++,
                     sample_features(shape.out));
        }
      }
      projector.set_gemv(true);
    }
  }
}

// At each family's row limit both paths run the same rows; both are checked against the
// reference, and against each other within the sum of their bounds.
TEST(CudaProjectionShapes, GemvAndTensorCoresAgreeAtTheRowLimit) {
  REQUIRE_GPU();
  uint64_t seed = 8000;
  for (const Format& format : formats()) {
    Projector gemv(64, 4096, 6144, format.weights, format.input);
    Projector tensor_cores(64, 4096, 6144, format.weights, format.input);
    tensor_cores.set_gemv(false);
    const HostMatrix m = make_host_matrix(format.weights, 6144, 4096, format.group_size, seed++);
    DeviceCopy d;
    upload(m, format.input, &d);
    const int64_t rows = gemv.gemv_max_rows(d.view);
    ASSERT_GT(rows, 0);
    ASSERT_TRUE(gemv.takes_gemv(rows, d.view));
    const auto sample = sample_features(6144);
    // The same seed: the same input rows on both paths.
    const auto a = check_form(gemv, format, m, d.view, rows, Form::store_fp32, seed, sample);
    const auto b =
        check_form(tensor_cores, format, m, d.view, rows, Form::store_fp32, seed, sample);
    EXPECT_NE(a, b);
    // And directly: the fp32 outputs of both, element by element.
    const HostRows x = make_host_rows(rows, 4096, seed + 1);
    auto dx = to_device(x.bits);
    DeviceBuffer<float> ya(rows * 6144), yb(rows * 6144);
    gemv.linear(dx.data(), rows, d.view, nullptr, ya.data(), true, nullptr);
    tensor_cores.linear(dx.data(), rows, d.view, nullptr, yb.data(), true, nullptr);
    std::vector<float> ha(rows * 6144), hb(rows * 6144);
    INFERLAB_CUDA_CHECK(cudaDeviceSynchronize());
    ya.download(ha.data(), ha.size());
    yb.download(hb.data(), hb.size());
    const auto eff = effective_input(x.values, rows, 4096, format.input);
    const ExactSums sums = exact_sums(m, eff, rows, {}, sample);
    const bool bf16_weights = format.input == DType::bf16 && format.weights != DType::bf16;
    int bad = 0;
    for (int64_t r = 0; r < rows; ++r) {
      for (size_t i = 0; i < sample.size(); ++i) {
        const double bound =
            (2 * kAccumulation + (bf16_weights ? kBf16Weights : 0.0)) * sums.mag(r, i);
        const size_t at = static_cast<size_t>(r * 6144 + sample[i]);
        if (!(std::abs(double(ha[at]) - hb[at]) <= bound) && ++bad <= 5) {
          ADD_FAILURE() << format.name << " [" << r << "][" << sample[i] << "] GEMV " << ha[at]
                        << " tensor cores " << hb[at];
        }
      }
    }
    EXPECT_EQ(bad, 0);
  }
}

}  // namespace
}  // namespace inferlab::engine
#else
TEST(CudaProjectionShapes, NeedsCuda) {
  GTEST_SKIP() << "built without CUDA";
}
#endif
