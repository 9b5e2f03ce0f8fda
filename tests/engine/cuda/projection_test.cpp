// The Projector on small shapes: every weight format's GEMV (store bf16/fp32, bias, residual
// add, SwiGLU, RMSNorm prologue) and tensor-core path against the CPU reference built from
// engine/quant/quantize.hpp (projection_reference.hpp), with the split-K and prologue variants;
// the fused forms against the unfused kernels bit for bit; bad calls refused. Each case draws
// fresh random data, poisons its output, and runs twice for bit-reproducibility.
//
// Tolerances (projection_test_support.hpp, projection_reference.hpp): element-wise, the exact
// fp64 value ± (2^-12 · Σ|w·x| for fp32 accumulation on tensor cores, plus 2^-9 · Σ|w·x| where
// the tensor-core path rounds int8/int4 weights to bf16) ± 2^-8 of each value rounded to bf16
// (twice the rounding error). Norm-wise against fp64: 2e-3 for one bf16 rounding of the
// output (it alone gives ~1.5e-3), 3e-3 with the residual sum rounded too, 5e-3 for SwiGLU's
// four roundings, 4e-3 with bf16-rounded weights; for calls with few outputs (under 4096, where
// a handful of large outputs carry the norm) the roundings' worst case instead, 2^-8 and
// 4 · 2^-8 for SwiGLU (projection_test_support.hpp); and against the reference rounded at the
// same points 1e-3 (only rare one-ulp flips differ). Without a GPU the tests skip.
#include <gtest/gtest.h>

#include "engine/cuda_backend.hpp"

#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include <stdexcept>
#include <string>
#include <vector>

#include "projection_forms.hpp"

namespace inferlab::engine {
namespace {

using namespace projection_test;
using cuda::GemvTuning;
using cuda::ProjectionPath;

#define REQUIRE_GPU() \
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU"

constexpr int64_t kMaxRows = 300, kMaxIn = 1024, kMaxOut = 1024;

struct Shape {
  int64_t out, in;
};
// Odd sizes: a partial feature group, several groups, slices that do not divide evenly.
const std::vector<Shape> kSmallShapes = {{72, 256}, {300, 640}};
// The tensor-core path of fp8 and W8A8 wants out a multiple of 16 (cuBLASLt's FP8 GEMM).
const std::vector<Shape> kTensorCoreShapes = {{80, 256}, {304, 640}};
const std::vector<int64_t> kGemvRows = {1, 2, 3, 5, 8, 16, 17, 32};
const std::vector<Form> kAllForms = {Form::store,        Form::store_fp32, Form::bias,
                                     Form::residual_add, Form::swiglu,     Form::norm,
                                     Form::norm_swiglu};

bool is_gemv(ProjectionPath path) {
  return path == ProjectionPath::gemv || path == ProjectionPath::gemv_prepared;
}

TEST(CudaProjection, GemvFormsMatchTheReference) {
  REQUIRE_GPU();
  uint64_t seed = 1000;
  for (const Format& format : formats()) {
    Projector projector(kMaxRows, kMaxIn, kMaxOut, format.weights, format.input);
    projector.set_gemv_stream(false);  // the tensor-core GEMV under test
    projector.set_gemv_max_rows(cuda::kProjectionGemvMaxRows);
    for (const Shape& shape : kSmallShapes) {
      const HostMatrix m =
          make_host_matrix(format.weights, shape.out, shape.in, format.group_size, seed++);
      DeviceCopy d;
      upload(m, format.input, &d);
      for (int64_t splits : {0, 1, 3}) {
        GemvTuning tuning;
        tuning.splits = splits;
        projector.set_gemv_tuning(tuning);
        for (int64_t rows : kGemvRows) {
          ASSERT_TRUE(projector.takes_gemv(rows, d.view)) << format.name << " rows " << rows;
          for (Form form : kAllForms) {
            SCOPED_TRACE("splits " + std::to_string(splits));
            const auto path = check_form(projector, format, m, d.view, rows, form, seed++);
            EXPECT_TRUE(is_gemv(path)) << cuda::projection_path_name(path);
          }
        }
      }
    }
  }
}

TEST(CudaProjection, TensorCorePathMatchesTheReference) {
  REQUIRE_GPU();
  uint64_t seed = 2000;
  for (const Format& format : formats()) {
    Projector projector(kMaxRows, kMaxIn, kMaxOut, format.weights, format.input);
    projector.set_gemv_stream(false);  // the tensor-core GEMV under test
    projector.set_gemv(false);
    for (const Shape& shape : kTensorCoreShapes) {
      const HostMatrix m =
          make_host_matrix(format.weights, shape.out, shape.in, format.group_size, seed++);
      DeviceCopy d;
      upload(m, format.input, &d);
      for (int64_t rows : {1, 2, 3, 5, 8, 16, 17, 64, 300}) {
        for (Form form : {Form::store, Form::store_fp32, Form::bias}) {
          const auto path = check_form(projector, format, m, d.view, rows, form, seed++);
          EXPECT_FALSE(is_gemv(path));
          if (format.weights == DType::fp8) {
            // Which FP8 route cuBLASLt allowed, for the record.
            RecordProperty("fp8_path", cuda::projection_path_name(path));
            EXPECT_TRUE(path == ProjectionPath::lt_fp8_outer ||
                        path == ProjectionPath::lt_fp8_epilogue);
          }
        }
      }
    }
  }
}

// int4 groups of 32 and 64 (2 or 4 groups per 128-k chunk): the GEMV to 8 / 16 rows, the
// tensor-core path past that; and every group size with zeros other than 8 (quantize_matrix's
// symmetric grid has 8 everywhere, so only these exercise the zero's handling).
TEST(CudaProjection, Int4SmallGroups) {
  REQUIRE_GPU();
  uint64_t seed = 3000;
  for (bool asymmetric : {false, true}) {
    for (int64_t group : {32, 64, 128, 256}) {
      if (group == 128 && !asymmetric) continue;  // formats()' int4-g128
      const std::string name =
          "int4-g" + std::to_string(group) + (asymmetric ? " (zeros 0-15)" : "");
      const Format format{DType::int4, DType::bf16, group, name.c_str()};
      Projector projector(kMaxRows, kMaxIn, kMaxOut, DType::int4, DType::bf16);
      projector.set_gemv_stream(false);  // the tensor-core GEMV under test
      projector.set_gemv_max_rows(cuda::kProjectionGemvMaxRows);
      HostMatrix m = make_host_matrix(DType::int4, 136, 512, group, seed++);
      if (asymmetric) randomize_int4_zeros(m, seed++);
      DeviceCopy d;
      upload(m, DType::bf16, &d);
      const int64_t limit = group == 32 ? 8 : group == 64 ? 16 : 32;
      for (int64_t rows : {1, 3, 8, 9, 16, 17, 32}) {
        EXPECT_EQ(projector.takes_gemv(rows, d.view), rows <= limit) << name << " " << rows;
        for (Form form : {Form::store, Form::bias, Form::swiglu, Form::norm}) {
          if (fused(form) && rows > limit) continue;
          check_form(projector, format, m, d.view, rows, form, seed++);
        }
      }
    }
  }
}

// The fused forms compute what the unfused kernels compute, bit for bit: the norm prologue
// what layer_kernels' rms_norm writes, SwiGLU what silu_mul_halves makes of the stored gate/up
// output, the residual add what adding the stored output does; and the prepare kernel's rows
// what the in-kernel prologue stages. (Same k slices in both, so the same sums.)
TEST(CudaProjection, FusedFormsMatchTheUnfusedKernels) {
  REQUIRE_GPU();
  uint64_t seed = 4000;
  const int64_t in = 512, out = 192, inter = out / 2;
  for (const Format& format : formats()) {
    Projector projector(kMaxRows, kMaxIn, kMaxOut, format.weights, format.input);
    projector.set_gemv_stream(false);  // the tensor-core GEMV under test
    projector.set_gemv_max_rows(cuda::kProjectionGemvMaxRows);
    const HostMatrix m = make_host_matrix(format.weights, out, in, format.group_size, seed++);
    DeviceCopy d;
    upload(m, format.input, &d);
    for (int64_t splits : {1, 2}) {
      for (int64_t rows : {1, 3, 8, 16, 32}) {
        SCOPED_TRACE(std::string(format.name) + " rows " + std::to_string(rows) + " splits " +
                     std::to_string(splits));
        const HostRows x = make_host_rows(rows, in, seed++, 3.0f);
        auto dx = to_device(x.bits);
        auto dnorm = to_device(random_bf16_bits(in, seed++, 1.0f, 0.5f));
        auto dbias = to_device(random_bf16_bits(out, seed++, 0.0f, 0.5f));
        const auto residual_bits = random_bf16_bits(rows * out, seed++, 0.0f, 2.0f);
        DeviceBuffer<bf16> normed(rows * in), stored(rows * out), act(rows * inter),
            fused_out(rows * out), residual(rows * out);
        auto with = [&](GemvTuning tuning) {
          tuning.splits = splits;
          projector.set_gemv_tuning(tuning);
        };
        with({});
        // Unfused: rms_norm, then the plain GEMV (store with bias), then silu_mul_halves.
        cuda::rms_norm(dx.data(), dnorm.data(), rows, in, 1e-5f, normed.data(), nullptr);
        projector.linear(normed.data(), rows, d.view, dbias.data(), stored.data(), false, nullptr);
        cuda::silu_mul_halves(stored.data(), rows, inter, act.data(), nullptr);
        const auto stored_bits = download_bits(stored, rows * out);
        const auto act_bits = download_bits(act, rows * inter);
        for (auto prologue : {cuda::GemvPrologue::fused, cuda::GemvPrologue::prepared}) {
          GemvTuning tuning;
          tuning.prologue = prologue;
          with(tuning);
          cuda::GemvFused args;
          args.x = dx.data();
          args.norm_weight = dnorm.data();
          args.eps = 1e-5f;
          args.bias = dbias.data();
          args.y = fused_out.data();
          projector.gemv_fused(args, rows, d.view, nullptr);
          EXPECT_TRUE(download_bits(fused_out, rows * out) == stored_bits) << "norm + store";
          EXPECT_EQ(projector.last_path(), prologue == cuda::GemvPrologue::fused
                                               ? ProjectionPath::gemv
                                               : ProjectionPath::gemv_prepared);
          args.epilogue = cuda::GemvFused::Epilogue::swiglu;
          projector.gemv_fused(args, rows, d.view, nullptr);
          EXPECT_TRUE(download_bits(fused_out, rows * inter) == act_bits) << "norm + swiglu";
        }
        // Residual add of the normed rows' projection: bf16(residual + bf16(y)).
        with({});
        residual.upload(reinterpret_cast<const bf16*>(residual_bits.data()), residual_bits.size());
        cuda::GemvFused args;
        args.x = normed.data();
        args.epilogue = cuda::GemvFused::Epilogue::residual_add;
        args.bias = dbias.data();
        args.residual = residual.data();
        projector.gemv_fused(args, rows, d.view, nullptr);
        const auto got = download_bits(residual, rows * out);
        int differ = 0;
        for (size_t i = 0; i < got.size(); ++i) {
          const float want =
              round_bf16(bf16_to_float(residual_bits[i]) + bf16_to_float(stored_bits[i]));
          differ += got[i] != float_to_bf16(want) ? 1 : 0;
        }
        EXPECT_EQ(differ, 0) << "residual add";
      }
    }
  }
}

// A quantized-input Projector serves bf16 matrices too (an unquantized LM head), also with a
// prepared (normed bf16) input at its largest row count.
TEST(CudaProjection, Bf16MatrixInAQuantizedProjector) {
  REQUIRE_GPU();
  uint64_t seed = 5500;
  for (const Format& quantized : {formats()[3], formats()[4]}) {
    Projector projector(16, 512, 512, quantized.weights, quantized.input);
    projector.set_gemv_stream(false);  // the tensor-core GEMV under test
    projector.set_gemv_max_rows(cuda::kProjectionGemvMaxRows);
    GemvTuning tuning;
    tuning.prologue = cuda::GemvPrologue::prepared;
    projector.set_gemv_tuning(tuning);
    for (const Format& format : {formats()[0], quantized}) {
      const HostMatrix m = make_host_matrix(format.weights, 208, 512, 0, seed++);
      DeviceCopy d;
      upload(m, format.input, &d);
      for (int64_t rows : {1, 16}) {
        for (Form form : {Form::norm, Form::bias, Form::norm_swiglu}) {
          const auto path = check_form(projector, format, m, d.view, rows, form, seed++);
          if (form != Form::bias) {
            EXPECT_EQ(path, ProjectionPath::gemv_prepared);
          }
        }
      }
    }
  }
}

TEST(CudaProjection, RefusesBadCalls) {
  REQUIRE_GPU();
  EXPECT_THROW(Projector(16, 256, 256, DType::fp8, DType::bf16), std::invalid_argument);
  EXPECT_THROW(Projector(16, 256, 256, DType::int4, DType::int8), std::invalid_argument);
  Projector projector(64, 1024, 1024, DType::int4, DType::bf16);
  projector.set_gemv_stream(false);  // the tensor-core GEMV under test
  const HostMatrix m = make_host_matrix(DType::int4, 64, 256, 128, 5000);
  DeviceCopy d;
  upload(m, DType::bf16, &d);
  DeviceBuffer<bf16> x(64 * 256 + 8), y(64 * 64 + 8);
  EXPECT_THROW(projector.linear(x.data() + 1, 1, d.view, nullptr, y.data(), false, nullptr),
               std::invalid_argument);  // x not 16-byte aligned
  EXPECT_THROW(projector.linear(x.data(), 65, d.view, nullptr, y.data(), false, nullptr),
               std::invalid_argument);  // more rows than built for
  DeviceMatrix wrong = d.view;
  wrong.format = DType::fp8;
  wrong.input_format = DType::fp8;
  EXPECT_THROW(projector.linear(x.data(), 1, wrong, nullptr, y.data(), false, nullptr),
               std::invalid_argument);  // a format this projector was not built for
  cuda::GemvFused args;
  args.x = x.data();
  args.y = y.data();
  EXPECT_FALSE(projector.takes_gemv(64, d.view));
  EXPECT_THROW(projector.gemv_fused(args, 64, d.view, nullptr), std::invalid_argument);
  args.epilogue = cuda::GemvFused::Epilogue::residual_add;
  args.residual = x.data();  // overlaps x
  EXPECT_THROW(projector.gemv_fused(args, 1, d.view, nullptr), std::invalid_argument);
  projector.set_gemv(false);
  EXPECT_FALSE(projector.takes_gemv(1, d.view));
  // fp8 on the tensor cores: out must be a multiple of 16.
  Projector fp8(64, 1024, 1024, DType::fp8, DType::fp8);
  const HostMatrix f = make_host_matrix(DType::fp8, 72, 256, 0, 5001);
  DeviceCopy df;
  upload(f, DType::fp8, &df);
  EXPECT_TRUE(fp8.takes_gemv(1, df.view));
  EXPECT_FALSE(fp8.takes_gemv(64, df.view));
  EXPECT_THROW(fp8.linear(x.data(), 64, df.view, nullptr, y.data(), false, nullptr),
               std::invalid_argument);
}

// Widths the GEMV cannot slice (not a multiple of its 64-byte chunk) go to the tensor cores.
TEST(CudaProjection, OddWidthsTakeTheTensorCorePath) {
  REQUIRE_GPU();
  uint64_t seed = 6000;
  for (const Format& format : formats()) {
    if (format.weights == DType::int4) continue;  // groups of 128 set the width anyway
    Projector projector(kMaxRows, kMaxIn, kMaxOut, format.weights, format.input);
    projector.set_gemv_stream(false);                            // the tensor-core GEMV under test
    const int64_t in = format.weights == DType::bf16 ? 48 : 80;  // 16 | in, chunk ∤ in
    const HostMatrix m = make_host_matrix(format.weights, 48, in, 0, seed++);
    DeviceCopy d;
    upload(m, format.input, &d);
    EXPECT_FALSE(projector.takes_gemv(1, d.view)) << format.name;
    for (int64_t rows : {1, 7}) {
      check_form(projector, format, m, d.view, rows, Form::bias, seed++);
    }
  }
}

}  // namespace
}  // namespace inferlab::engine
#else
TEST(CudaProjection, NeedsCuda) {
  GTEST_SKIP() << "built without CUDA";
}
#endif
