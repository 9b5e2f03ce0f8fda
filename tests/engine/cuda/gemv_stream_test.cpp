// The streaming GEMV (engine/cuda/gemv_stream.hpp: 1-2 rows, every format) against the CPU
// reference built from engine/quant/quantize.hpp, through the Projector: every form (store
// bf16/fp32, bias, residual add, SwiGLU, RMSNorm prologue, both), odd and Llama 3 8B shapes,
// int4 groups of 32/64/128 with random zeros; the fused forms bit for bit against the unfused
// kernels (its norm is the unfused kernel's, bit for bit, gemv_rows.cuh). Tolerances as the
// tensor-core GEMV's (projection_test.cpp), except fp32 outputs of quantized weights, whose
// fp16 partial sums (int8, fp8) or 2^-15 input steps (int4) are within kStreamFp32Limit. Without a
// GPU the tests skip.
#include <gtest/gtest.h>

#include "engine/cuda_backend.hpp"

#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/cuda/gemv_stream.hpp"
#include "engine/cuda/layer_kernels.hpp"
#include "projection_forms.hpp"

namespace inferlab::engine {
namespace {

using namespace projection_test;
using cuda::ProjectionPath;

#define REQUIRE_GPU() \
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU"

struct Shape {
  int64_t out, in;
};

TEST(CudaGemvStream, EveryFormAndFormatMatchesTheReference) {
  REQUIRE_GPU();
  uint64_t seed = 9000;
  const std::vector<Shape> shapes = {{72, 256}, {301, 640}, {96, 1024}};
  const std::vector<Form> forms = {Form::store,  Form::store_fp32,   Form::bias,       Form::norm,
                                   Form::swiglu, Form::residual_add, Form::norm_swiglu};
  for (const Format& format : formats()) {
    Projector projector(2, 1024, 1024, format.weights, format.input);
    for (const Shape& shape : shapes) {
      HostMatrix m =
          make_host_matrix(format.weights, shape.out, shape.in, format.group_size, seed++);
      if (format.weights == DType::int4) randomize_int4_zeros(m, seed++);
      DeviceCopy d;
      upload(m, format.input, &d);
      for (int64_t rows : {1, 2}) {
        ASSERT_TRUE(cuda::gemv_stream_supported(rows, d.view)) << format.name;
        for (Form form : forms) {
          if ((form == Form::swiglu || form == Form::norm_swiglu) && shape.out % 2 != 0) continue;
          const auto path = check_form(projector, format, m, d.view, rows, form, seed++);
          EXPECT_EQ(path, ProjectionPath::gemv_stream) << cuda::projection_path_name(path);
        }
      }
    }
  }
}

TEST(CudaGemvStream, Int4GroupsOf32And64) {
  REQUIRE_GPU();
  uint64_t seed = 9500;
  for (int64_t group : {32, 64}) {
    Format format = formats()[2];  // int4
    format.group_size = group;
    Projector projector(2, 512, 512, format.weights, format.input);
    HostMatrix m = make_host_matrix(format.weights, 136, 512, group, seed++);
    randomize_int4_zeros(m, seed++);
    DeviceCopy d;
    upload(m, format.input, &d);
    for (int64_t rows : {1, 2}) {
      for (Form form : {Form::store, Form::norm_swiglu, Form::residual_add}) {
        EXPECT_EQ(check_form(projector, format, m, d.view, rows, form, seed++),
                  ProjectionPath::gemv_stream);
      }
    }
  }
}

// The int4 kernel finds a vector's group by a shift where the group is a power of two vectors
// (at most 32 of them: lane >> g; more: the stage's first vector alone decides) and by a
// division otherwise (96: three vectors); a group of a whole row is per-channel int4. A stage is
// 128 vectors (4096 weights): every group size here has a full stage (the path without a test a
// vector: g = 0, 1, 4, 5, 6, 7 and 3; 96 takes the division there too) and most a partial last
// one (576: 18 vectors only; 4224, 4608, 8448), with odd row counts (the last task one row).
TEST(CudaGemvStream, Int4GroupsOfEveryKindTheKernelTakes) {
  REQUIRE_GPU();
  struct Case {
    int64_t group, out, in;
  };
  uint64_t seed = 9700;
  for (const Case& c : {Case{96, 97, 576}, Case{96, 97, 4608}, Case{32, 34, 4096},
                        Case{64, 35, 4224}, Case{512, 20, 4096}, Case{1024, 64, 4096},
                        Case{2048, 33, 4096}, Case{4096, 18, 4096}, Case{256, 40, 8448}}) {
    Format format = formats()[2];  // int4
    format.group_size = c.group;
    Projector projector(2, c.in, c.out, format.weights, format.input);
    HostMatrix m = make_host_matrix(format.weights, c.out, c.in, c.group, seed++);
    randomize_int4_zeros(m, seed++);
    DeviceCopy d;
    upload(m, format.input, &d);
    ASSERT_TRUE(cuda::gemv_stream_supported(1, d.view)) << c.group;
    for (int64_t rows : {1, 2}) {
      for (Form form : {Form::store, Form::norm, Form::residual_add}) {
        EXPECT_EQ(check_form(projector, format, m, d.view, rows, form, seed++),
                  ProjectionPath::gemv_stream)
            << "group " << c.group;
      }
      if (c.out % 2 == 0) {
        EXPECT_EQ(check_form(projector, format, m, d.view, rows, Form::norm_swiglu, seed++),
                  ProjectionPath::gemv_stream);
      }
    }
  }
}

// At the extreme of the int4 kernel's range: a GPTQ v1 zero of 16 with every code 0 (q − z =
// −16) against an input whose elements all equal its absmax (each staged at the largest |x'|),
// the sums must stay finite. Each output is −16 · 128 · (the sum of the row's two group scales);
// the integer sums are exact (the fp16 route of 2026-11-29's morning summed eight products in fp16
// up to 61440 here), so the only errors are fp32's and the bf16 rounding.
TEST(CudaGemvStream, Int4SumsStayFiniteAtTheBoundOfTheirRange) {
  REQUIRE_GPU();
  const int64_t out = 64, in = 256, group = 128;
  Format format = formats()[2];  // int4
  HostMatrix m = make_host_matrix(format.weights, out, in, group, 10100);
  std::fill(m.quantized.data.begin(), m.quantized.data.end(), uint8_t{0});
  std::fill(m.quantized.zeros.begin(), m.quantized.zeros.end(), uint8_t{16});
  for (float& scale : m.quantized.scales) scale = fp16_to_float(float_to_fp16(scale));
  m.values = dequantize_matrix(m.quantized);
  DeviceCopy d;
  upload(m, format.input, &d);
  ASSERT_TRUE(cuda::gemv_stream_supported(1, d.view));
  const std::vector<uint16_t> ones(static_cast<size_t>(in), float_to_bf16(1.0f));
  auto dx = to_device(ones);
  DeviceBuffer<bf16> y(out);
  Projector projector(1, in, out, format.weights, format.input);
  projector.linear(dx.data(), 1, d.view, nullptr, y.data(), false, nullptr);
  EXPECT_EQ(projector.last_path(), ProjectionPath::gemv_stream);
  const auto got = download_bits(y, out);
  for (int64_t o = 0; o < out; ++o) {
    double want = 0.0;
    for (int64_t k = 0; k < in; ++k) want += m.values[o * in + k];
    const float value = bf16_to_float(got[o]);
    ASSERT_TRUE(std::isfinite(value)) << "row " << o;
    EXPECT_NEAR(value, want, std::abs(want) / 256) << "row " << o;
  }
}

// Weight-only int8 and int4 on an input row of absmax 4e-37, below where 1 / (absmax /
// code_max) overflows fp32 (~7e-37 at int8's 240; int4's per-block powers of two have no such
// limit): the sums stay finite and within the quantized formats' fp32 bound of the double
// reference.
TEST(CudaGemvStream, WeightOnlyRowsOfTinyMagnitudeStayFinite) {
  REQUIRE_GPU();
  const int64_t out = 64, in = 512;
  for (int index : {1, 2}) {  // int8, int4-g128
    const Format& format = formats()[static_cast<size_t>(index)];
    const HostMatrix m = make_host_matrix(format.weights, out, in, format.group_size, 10300);
    DeviceCopy d;
    upload(m, format.input, &d);
    std::vector<uint16_t> x(static_cast<size_t>(in));
    std::vector<double> xv(x.size());
    for (int64_t k = 0; k < in; ++k) {
      x[static_cast<size_t>(k)] = float_to_bf16(4e-37f * (0.5f + 0.5f * ((k * 37) % 64) / 64.0f) *
                                                (k % 3 == 0 ? -1.0f : 1.0f));
      xv[static_cast<size_t>(k)] = bf16_to_float(x[static_cast<size_t>(k)]);
    }
    auto dx = to_device(x);
    DeviceBuffer<float> y(out);
    Projector projector(1, in, out, format.weights, format.input);
    projector.linear(dx.data(), 1, d.view, nullptr, y.data(), true, nullptr);
    EXPECT_EQ(projector.last_path(), ProjectionPath::gemv_stream) << format.name;
    std::vector<float> got(static_cast<size_t>(out));
    ASSERT_EQ(cudaMemcpy(got.data(), y.data(), got.size() * sizeof(float), cudaMemcpyDeviceToHost),
              cudaSuccess);
    for (int64_t o = 0; o < out; ++o) {
      double want = 0.0, magnitude = 0.0;
      for (int64_t k = 0; k < in; ++k) {
        want += m.values[o * in + k] * xv[static_cast<size_t>(k)];
        magnitude += std::abs(m.values[o * in + k] * xv[static_cast<size_t>(k)]);
      }
      const float value = got[static_cast<size_t>(o)];
      ASSERT_TRUE(std::isfinite(value)) << format.name << ", row " << o;
      EXPECT_NEAR(value, want, magnitude * kStreamFp32Limit) << format.name << ", row " << o;
    }
  }
}

// int4 stages each 32-element block of the input at its own power of two, relative to the row's
// largest block. Blocks of 1, 37 and 1000 set that largest exponent while their weights are the
// groups' zeros (q = z: no contribution), so each small class of blocks is checked against its
// own Σ|w·x|: 1e-3, 1e-12 and 1e-30 (2^-110 below the largest) within the tolerance, bf16
// subnormals (~1e-39, more than 2^126 below) contributing zero by design. Rows 1 and 2, each row
// with its own classes. A wrong row exponent would cancel out of the kept classes (their scale
// and the row's multiply back); the dropped class is what shows the large blocks set it, and the
// other tests' full rows check the large blocks' own arithmetic.
TEST(CudaGemvStream, Int4BlocksOfFarApartMagnitudesMatchTheReference) {
  REQUIRE_GPU();
  const int64_t out = 64, in = 1024;
  const Format& format = formats()[2];  // int4-g128
  ASSERT_EQ(format.weights, DType::int4);
  HostMatrix m = make_host_matrix(format.weights, out, in, format.group_size, 10400);
  const auto large = [](int64_t block) { return block % 4 == 0; };  // 1, 37, 1000 in turn
  const int64_t groups = in / m.group_size;
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t k = 0; k < in; ++k) {
      if (!large(k / 32)) continue;
      uint8_t& byte = m.quantized.data[static_cast<size_t>((o * in + k) / 2)];
      const int shift = 4 * static_cast<int>(k % 2);
      const uint8_t zero = m.quantized.zeros[static_cast<size_t>(o * groups + k / m.group_size)];
      byte = static_cast<uint8_t>((byte & ~(0xf << shift)) | (zero << shift));
    }
  }
  m.values = dequantize_matrix(m.quantized);
  DeviceCopy d;
  upload(m, format.input, &d);
  const float large_scales[] = {1.0f, 37.0f, 1e3f};
  const float small_scales[] = {1e-3f, 1e-12f, 1e-30f, 1e-39f};
  Projector projector(2, in, out, format.weights, format.input);
  for (int rows : {1, 2}) {
    for (int c = 0; c < 4; ++c) {
      SCOPED_TRACE("rows " + std::to_string(rows) + ", class " + std::to_string(c));
      std::vector<uint16_t> x(static_cast<size_t>(rows * in));
      std::vector<double> xv(x.size());
      for (int r = 0; r < rows; ++r) {
        const float small = small_scales[(c + r) % 4];
        for (int64_t k = 0; k < in; ++k) {
          const int64_t block = k / 32;
          const float scale = large(block) ? large_scales[(block / 4) % 3] : small;
          const float value =
              scale * (0.25f + ((k * 53 + r * 7) % 97) / 97.0f) * (k % 5 == 0 ? -1.0f : 1.0f);
          const size_t i = static_cast<size_t>(r * in + k);
          x[i] = float_to_bf16(value);
          xv[i] = bf16_to_float(x[i]);
        }
      }
      auto dx = to_device(x);
      DeviceBuffer<float> y(rows * out);
      projector.linear(dx.data(), rows, d.view, nullptr, y.data(), true, nullptr);
      EXPECT_EQ(projector.last_path(), ProjectionPath::gemv_stream);
      std::vector<float> got(static_cast<size_t>(rows * out));
      ASSERT_EQ(
          cudaMemcpy(got.data(), y.data(), got.size() * sizeof(float), cudaMemcpyDeviceToHost),
          cudaSuccess);
      for (int r = 0; r < rows; ++r) {
        const bool dropped = small_scales[(c + r) % 4] < 1e-38f;
        for (int64_t o = 0; o < out; ++o) {
          double want = 0.0, magnitude = 0.0;
          for (int64_t k = 0; k < in; ++k) {
            const double product = m.values[o * in + k] * xv[static_cast<size_t>(r * in + k)];
            want += product;
            magnitude += std::abs(product);
          }
          const float value = got[static_cast<size_t>(r * out + o)];
          ASSERT_GT(magnitude, 0.0);
          if (dropped) {
            EXPECT_EQ(value, 0.0f) << "row " << r << ", feature " << o;
          } else {
            EXPECT_NEAR(value, want, magnitude * kStreamFp32Limit)
                << "row " << r << ", feature " << o;
            EXPECT_GT(std::abs(value), 0.0f);
          }
        }
      }
    }
  }
}

// A NaN or an infinity in the input makes int4's outputs NaN, as the fp16 path and the CPU
// reference do: with or without the RMSNorm prologue, in one row of two.
TEST(CudaGemvStream, Int4NonFiniteInputsGiveNaN) {
  REQUIRE_GPU();
  const int64_t out = 32, in = 512;
  const Format& format = formats()[2];
  const HostMatrix m = make_host_matrix(format.weights, out, in, format.group_size, 10450);
  DeviceCopy d;
  upload(m, format.input, &d);
  auto dnorm = to_device(random_bf16_bits(in, 10451, 1.0f, 0.5f));
  Projector projector(2, in, out, format.weights, format.input);
  for (const float bad : {std::nanf(""), INFINITY}) {
    for (bool norm : {false, true}) {
      SCOPED_TRACE(std::string(std::isnan(bad) ? "NaN" : "Inf") + (norm ? ", norm" : ""));
      HostRows x = make_host_rows(2, in, 10452, 1.0f);
      x.bits[static_cast<size_t>(in + 100)] = float_to_bf16(bad);  // row 1 only
      auto dx = to_device(x.bits);
      DeviceBuffer<bf16> y(2 * out);
      cuda::GemvFused args;
      args.x = dx.data();
      args.norm_weight = norm ? dnorm.data() : nullptr;
      args.eps = 1e-5f;
      args.y = y.data();
      projector.gemv_fused(args, 2, d.view, nullptr);
      EXPECT_EQ(projector.last_path(), ProjectionPath::gemv_stream);
      const auto bits = download_bits(y, static_cast<size_t>(2 * out));
      for (int64_t o = 0; o < out; ++o) {
        EXPECT_TRUE(std::isfinite(bf16_to_float(bits[static_cast<size_t>(o)]))) << o;
        EXPECT_TRUE(std::isnan(bf16_to_float(bits[static_cast<size_t>(out + o)]))) << o;
      }
    }
  }
}

// Llama 3 8B's shapes (the decode step's projections and its LM head), sampled features.
TEST(CudaGemvStream, Llama3_8bShapes) {
  REQUIRE_GPU();
  uint64_t seed = 9700;
  const std::vector<std::pair<Shape, Form>> cases = {{{6144, 4096}, Form::norm},
                                                     {{4096, 4096}, Form::residual_add},
                                                     {{28672, 4096}, Form::norm_swiglu},
                                                     {{4096, 14336}, Form::residual_add},
                                                     {{128256, 4096}, Form::store_fp32}};
  for (const Format& format : formats()) {
    Projector projector(2, 14336, 128256, format.weights, format.input);
    for (const auto& [shape, form] : cases) {
      const HostMatrix m =
          make_host_matrix(format.weights, shape.out, shape.in, format.group_size, seed++);
      DeviceCopy d;
      upload(m, format.input, &d);
      EXPECT_EQ(check_form(projector, format, m, d.view, 1, form, seed++),
                ProjectionPath::gemv_stream);
    }
  }
}

// The fused forms compute the unfused kernels' bits: rms_norm then the GEMV, the GEMV then
// silu_mul_halves, the GEMV then bf16(residual + bf16(y)).
TEST(CudaGemvStream, FusedFormsEqualTheUnfusedKernels) {
  REQUIRE_GPU();
  uint64_t seed = 9900;
  const int64_t in = 512, out = 256, inter = out / 2;
  for (const Format& format : formats()) {
    Projector projector(2, 1024, 1024, format.weights, format.input);
    const HostMatrix m = make_host_matrix(format.weights, out, in, format.group_size, seed++);
    DeviceCopy d;
    upload(m, format.input, &d);
    for (int64_t rows : {1, 2}) {
      SCOPED_TRACE(std::string(format.name) + " rows " + std::to_string(rows));
      const HostRows x = make_host_rows(rows, in, seed++, 3.0f);
      auto dx = to_device(x.bits);
      auto dnorm = to_device(random_bf16_bits(in, seed++, 1.0f, 0.5f));
      const auto residual_bits = random_bf16_bits(rows * out, seed++, 0.0f, 2.0f);
      DeviceBuffer<bf16> normed(rows * in), stored(rows * out), act(rows * inter),
          fused_out(rows * out), residual(rows * out);
      cuda::rms_norm(dx.data(), dnorm.data(), rows, in, 1e-5f, normed.data(), nullptr);
      projector.linear(normed.data(), rows, d.view, nullptr, stored.data(), false, nullptr);
      EXPECT_EQ(projector.last_path(), ProjectionPath::gemv_stream);
      cuda::silu_mul_halves(stored.data(), rows, inter, act.data(), nullptr);
      const auto stored_bits = download_bits(stored, rows * out);
      const auto act_bits = download_bits(act, rows * inter);

      cuda::GemvFused args;
      args.x = dx.data();
      args.norm_weight = dnorm.data();
      args.eps = 1e-5f;
      args.y = fused_out.data();
      projector.gemv_fused(args, rows, d.view, nullptr);
      EXPECT_TRUE(download_bits(fused_out, rows * out) == stored_bits) << "norm + store";
      args.epilogue = cuda::GemvFused::Epilogue::swiglu;
      projector.gemv_fused(args, rows, d.view, nullptr);
      EXPECT_TRUE(download_bits(fused_out, rows * inter) == act_bits) << "norm + swiglu";

      residual.upload(reinterpret_cast<const bf16*>(residual_bits.data()), residual_bits.size());
      cuda::GemvFused add;
      add.x = normed.data();
      add.epilogue = cuda::GemvFused::Epilogue::residual_add;
      add.residual = residual.data();
      projector.gemv_fused(add, rows, d.view, nullptr);
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

// The RoPE epilogue computes the bits of the GEMV's plain store followed by rope_kv_write
// (layer_kernels.cu), which is what the engine ran before it: the stored rows (queries rotated,
// keys and values as computed), the rotated keys and the values in the bf16 cache at each row's
// slot, and nothing else of the cache. Every format, one and two rows, a GQA shape with head_dim
// 64 and Llama 3 8B's (32 heads over 8, head_dim 128), a QKV bias, positions past 2^17 (sincosf's
// slow path) and near zero.
TEST(CudaGemvStream, RopeEpilogueEqualsTheGemvThenRopeKvWrite) {
  REQUIRE_GPU();
  struct Heads {
    int heads, kv_heads, head_dim;
    int64_t in;
  };
  uint64_t seed = 9950;
  const int64_t kSlots = 16;
  for (const Heads& h : {Heads{4, 2, 64, 512}, Heads{32, 8, 128, 4096}}) {
    const int64_t out = static_cast<int64_t>(h.heads + 2 * h.kv_heads) * h.head_dim;
    const int64_t cache_elems = kSlots * h.kv_heads * h.head_dim;
    std::vector<float> inv_freq(static_cast<size_t>(h.head_dim / 2));
    for (size_t i = 0; i < inv_freq.size(); ++i) {
      inv_freq[i] = static_cast<float>(1.0 / std::pow(500000.0, 2.0 * i / h.head_dim));
    }
    DeviceBuffer<float> d_inv_freq(inv_freq.size());
    d_inv_freq.upload(inv_freq.data(), inv_freq.size());
    const std::vector<int32_t> positions = {140001, 3}, slots = {11, 2};
    DeviceBuffer<int32_t> d_positions(2), d_slots(2);
    d_positions.upload(positions.data(), 2);
    d_slots.upload(slots.data(), 2);
    for (const Format& format : formats()) {
      Projector projector(2, h.in, out, format.weights, format.input);
      const HostMatrix m = make_host_matrix(format.weights, out, h.in, format.group_size, seed++);
      DeviceCopy d;
      upload(m, format.input, &d);
      auto bias = to_device(random_bf16_bits(static_cast<size_t>(out), seed++, 0.0f, 0.5f));
      for (int64_t rows : {1, 2}) {
        for (bool with_bias : {false, true}) {
          SCOPED_TRACE(std::string(format.name) + " heads " + std::to_string(h.heads) + " rows " +
                       std::to_string(rows) + (with_bias ? " bias" : ""));
          const HostRows x = make_host_rows(rows, h.in, seed++, 3.0f);
          auto dx = to_device(x.bits);
          auto dnorm = to_device(random_bf16_bits(static_cast<size_t>(h.in), seed++, 1.0f, 0.5f));
          const auto cache_bits =
              random_bf16_bits(static_cast<size_t>(2 * cache_elems), seed++, 0.0f, 1.0f);
          DeviceBuffer<bf16> qkv_a(rows * out), qkv_b(rows * out);
          DeviceBuffer<bf16> cache_a(2 * cache_elems), cache_b(2 * cache_elems);
          cache_a.upload(reinterpret_cast<const bf16*>(cache_bits.data()), cache_bits.size());
          cache_b.upload(reinterpret_cast<const bf16*>(cache_bits.data()), cache_bits.size());

          cuda::GemvFused args;
          args.x = dx.data();
          args.norm_weight = dnorm.data();
          args.eps = 1e-5f;
          args.bias = with_bias ? bias.data() : nullptr;
          args.y = qkv_a.data();
          projector.gemv_fused(args, rows, d.view, nullptr);
          cuda::KvLayerCache cache;
          cache.k = cache_a.data();
          cache.v = cache_a.data() + cache_elems;
          cuda::rope_kv_write(qkv_a.data(), static_cast<int>(rows), h.heads, h.kv_heads, h.head_dim,
                              d_positions.data(), d_slots.data(), d_inv_freq.data(), cache,
                              nullptr);

          ASSERT_TRUE(projector.takes_rope_epilogue(rows, d.view));
          args.y = qkv_b.data();
          args.epilogue = cuda::GemvFused::Epilogue::rope_kv_write;
          args.rope = {
              h.heads,        h.kv_heads,        h.head_dim,     d_positions.data(),
              d_slots.data(), d_inv_freq.data(), cache_b.data(), cache_b.data() + cache_elems};
          projector.gemv_fused(args, rows, d.view, nullptr);
          EXPECT_EQ(projector.last_path(), ProjectionPath::gemv_stream);
          EXPECT_TRUE(download_bits(qkv_b, rows * out) == download_bits(qkv_a, rows * out))
              << "the stored rows";
          EXPECT_TRUE(download_bits(cache_b, 2 * cache_elems) ==
                      download_bits(cache_a, 2 * cache_elems))
              << "the cache";
        }
      }
    }
  }
}

// The RoPE epilogue refuses what it cannot do: a matrix that is not (heads + 2 KV heads) x
// head_dim rows, an odd head_dim, missing pointers.
TEST(CudaGemvStream, RopeEpilogueRefusesOtherShapes) {
  REQUIRE_GPU();
  const Format& format = formats()[0];
  Projector projector(2, 256, 256, format.weights, format.input);
  const HostMatrix m = make_host_matrix(format.weights, 256, 256, format.group_size, 9990);
  DeviceCopy d;
  upload(m, format.input, &d);
  // Real inputs: the last call runs the kernel, which writes the cache at the slots given.
  const auto x_bits = random_bf16_bits(256, 9991, 0.0f, 1.0f);
  auto x = to_device(x_bits);
  DeviceBuffer<bf16> y(256), cache(1024);
  const std::vector<int32_t> position_and_slot = {0, 1};  // position 0, slot 1 of 8
  DeviceBuffer<int32_t> ints(2);
  ints.upload(position_and_slot.data(), 2);
  const std::vector<float> frequencies(32, 0.5f);
  DeviceBuffer<float> inv_freq(32);
  inv_freq.upload(frequencies.data(), frequencies.size());
  cuda::GemvFused args;
  args.x = x.data();
  args.y = y.data();
  args.epilogue = cuda::GemvFused::Epilogue::rope_kv_write;
  auto good = [&] {
    return cuda::GemvFused::Rope{
        2, 1, 64, ints.data(), ints.data() + 1, inv_freq.data(), cache.data(), cache.data() + 512};
  };
  args.rope = good();
  args.rope.num_heads = 3;  // 5 x 64 = 320 rows, not 256
  EXPECT_THROW(projector.gemv_fused(args, 1, d.view, nullptr), std::invalid_argument);
  args.rope = good();
  args.rope.head_dim = 63;
  EXPECT_THROW(projector.gemv_fused(args, 1, d.view, nullptr), std::invalid_argument);
  args.rope = good();
  args.rope.slots = nullptr;
  EXPECT_THROW(projector.gemv_fused(args, 1, d.view, nullptr), std::invalid_argument);
  args.rope = good();
  EXPECT_NO_THROW(projector.gemv_fused(args, 1, d.view, nullptr));
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

}  // namespace
}  // namespace inferlab::engine

#endif  // INFERLAB_ENGINE_HAVE_CUDA
