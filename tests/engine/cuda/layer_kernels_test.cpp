// The CUDA layer kernels against the CPU references (engine/cpu/ops, engine/rope) on
// bf16-rounded inputs. Without a GPU the tests skip.
#include <gtest/gtest.h>

#include "engine/cuda_backend.hpp"

#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "engine/bf16.hpp"
#include "engine/cpu/ops.hpp"
#include "engine/cuda/bf16_test_data.hpp"
#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/layer_kernels.hpp"
#include "engine/quant/quantize.hpp"
#include "engine/rope.hpp"

namespace inferlab::engine {
namespace {

using cuda::bf16;
using cuda::DeviceBuffer;

#define REQUIRE_GPU() \
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU"

// The kernels round intermediate values to bf16 as transformers does (a few roundings of
// relative size 2^-8 each); against the fp32 reference that allows ~1.5% of the value plus a
// small absolute term for values near zero.
void expect_close_bf16(const std::vector<float>& got, const std::vector<float>& want,
                       double relative = 0.016, double absolute = 2e-3) {
  ASSERT_EQ(got.size(), want.size());
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::abs(got[i] - want[i]) > absolute + relative * std::abs(want[i])) {
      if (++bad <= 5) ADD_FAILURE() << "at " << i << ": " << got[i] << " vs " << want[i];
    }
  }
  EXPECT_EQ(bad, 0);
}

TEST(CudaLayerKernels, RmsNormAndFusedAddMatchTheReference) {
  REQUIRE_GPU();
  for (int hidden : {64, 2048, 4096, 100}) {  // 100: the unvectorized path
    const int rows = 5;
    auto x = random_bf16(static_cast<size_t>(rows * hidden), 1, 0.5f, 2.0f);
    auto delta = random_bf16(x.values.size(), 2);
    auto weight = random_bf16(static_cast<size_t>(hidden), 3, 1.0f, 0.1f);
    auto dx = to_device(x.bits), dd = to_device(delta.bits), dw = to_device(weight.bits);
    DeviceBuffer<bf16> out(x.values.size());
    cuda::rms_norm(dx.data(), dw.data(), rows, hidden, 1e-5f, out.data(), nullptr);
    std::vector<float> want(x.values.size());
    for (int r = 0; r < rows; ++r) {
      cpu::rms_norm(&x.values[r * hidden], weight.values.data(), hidden, 1e-5, &want[r * hidden]);
    }
    expect_close_bf16(to_host(out), want);

    cuda::add_rms_norm(dx.data(), dd.data(), dw.data(), rows, hidden, 1e-5f, out.data(), nullptr);
    std::vector<float> sum(x.values.size());
    for (size_t i = 0; i < sum.size(); ++i)
      sum[i] = bf16_to_float(float_to_bf16(x.values[i] + delta.values[i]));
    for (int r = 0; r < rows; ++r) {
      cpu::rms_norm(&sum[r * hidden], weight.values.data(), hidden, 1e-5, &want[r * hidden]);
    }
    EXPECT_EQ(to_host(dx), sum) << "the residual holds the bf16-rounded sum, hidden " << hidden;
    expect_close_bf16(to_host(out), want);
  }
}

// Qwen3's per-head norm: every query and key head of each fused QKV row normalised with its own
// weight, the value heads untouched; head sizes 64 to 256 and an odd 96 (lanes partly idle), a
// warp count that leaves the last block partial (3 tokens x 5 heads = 15 warps).
TEST(CudaLayerKernels, HeadRmsNormNormalisesQueryAndKeyHeadsOnly) {
  REQUIRE_GPU();
  for (int d : {64, 96, 128, 256}) {
    const int tokens = 3, heads = 4, kv_heads = 1;
    const int row = (heads + 2 * kv_heads) * d;
    auto qkv = random_bf16(static_cast<size_t>(tokens * row), 6, 0.3f, 1.5f);
    auto q_weight = random_bf16(static_cast<size_t>(d), 7, 1.0f, 0.1f);
    auto k_weight = random_bf16(static_cast<size_t>(d), 8, 1.0f, 0.1f);
    auto dq = to_device(qkv.bits), dqw = to_device(q_weight.bits), dkw = to_device(k_weight.bits);
    cuda::head_rms_norm(dq.data(), tokens, heads, kv_heads, d, dqw.data(), dkw.data(), 1e-6f,
                        nullptr);
    const auto got = to_host(dq);
    std::vector<float> want = qkv.values;
    for (int t = 0; t < tokens; ++t) {
      for (int h = 0; h < heads + kv_heads; ++h) {
        float* head = &want[static_cast<size_t>(t * row + h * d)];
        cpu::rms_norm(head, (h < heads ? q_weight : k_weight).values.data(), d, 1e-6, head);
      }
    }
    expect_close_bf16(got, want);
    for (int t = 0; t < tokens; ++t) {  // the value heads: bit for bit what went in
      for (int i = (heads + kv_heads) * d; i < row; ++i) {
        ASSERT_EQ(got[static_cast<size_t>(t * row + i)],
                  qkv.values[static_cast<size_t>(t * row + i)])
            << "head_dim " << d;
      }
    }
  }
}

// Several blocks per token (4 heads each), a partial last block, head_dim 64 and 128.
void check_rope(int heads, int kv_heads, int d) {
  const int tokens = 3;
  const int row = (heads + 2 * kv_heads) * d;
  auto qkv = random_bf16(static_cast<size_t>(tokens * row), 4);
  RopeParams rope;
  rope.kind = RopeParams::Kind::llama3;
  rope.theta = 500000;
  rope.factor = 32;
  rope.original_max_position_embeddings = 8192;
  const auto inv_freq_d = rope_inverse_frequencies(rope, d);
  std::vector<float> inv_freq(inv_freq_d.begin(), inv_freq_d.end());
  const std::vector<int32_t> positions = {0, 7, 3000}, slots = {5, 0, 9};
  auto dq = to_device(qkv.bits);
  DeviceBuffer<float> df(inv_freq.size());
  df.upload(inv_freq.data(), inv_freq.size());
  DeviceBuffer<int32_t> dp(3), ds(3);
  dp.upload(positions.data(), 3);
  ds.upload(slots.data(), 3);
  const size_t cache = 10 * kv_heads * d;
  DeviceBuffer<bf16> k_cache(cache), v_cache(cache);
  cuda::rope_kv_write(dq.data(), tokens, heads, kv_heads, d, dp.data(), ds.data(), df.data(),
                      {DType::bf16, k_cache.data(), v_cache.data(), nullptr, nullptr}, nullptr);
  const auto got = to_host(dq), keys = to_host(k_cache), values = to_host(v_cache);
  for (int t = 0; t < tokens; ++t) {
    std::vector<float> want(qkv.values.begin() + t * row, qkv.values.begin() + (t + 1) * row);
    for (int h = 0; h < heads + kv_heads; ++h)
      apply_rope(&want[h * d], d, positions[t], inv_freq_d);
    std::vector<float> got_q(got.begin() + t * row, got.begin() + t * row + heads * d);
    // bf16 cos/sin and three roundings: ~2^-7 relative per element, plus the bf16 angle error.
    expect_close_bf16(got_q, std::vector<float>(want.begin(), want.begin() + heads * d), 0.02,
                      0.03);
    std::vector<float> got_k(keys.begin() + slots[t] * kv_heads * d,
                             keys.begin() + (slots[t] + 1) * kv_heads * d);
    expect_close_bf16(
        got_k, std::vector<float>(want.begin() + heads * d, want.begin() + (heads + kv_heads) * d),
        0.02, 0.03);
    for (int i = 0; i < kv_heads * d; ++i) {
      ASSERT_EQ(values[slots[t] * kv_heads * d + i],
                qkv.values[t * row + (heads + kv_heads) * d + i]);
    }
  }
}

TEST(CudaLayerKernels, RopeWritesRotatedQueriesAndTheCacheSlots) {
  REQUIRE_GPU();
  check_rope(4, 2, 128);
  check_rope(32, 8, 128);  // Llama 3 8B: 10 blocks per token
  check_rope(6, 6, 64);
}

// The int8 / fp8 cache against the host quantization: the same inputs go through rope_kv_write
// once with a bf16 cache (whose rotated keys the test above checks against apply_rope) and once
// with the quantized cache. The quantized run must leave the same bits in qkv (queries rotated
// in place alike), and each (token, KV head) vector in the cache must be exactly what
// quantize_row_int8 / quantize_row_e4m3 make of the bf16 run's key, or of the input value: the
// same bytes and the same fp32 scale (both sides divide with IEEE rounding and round to nearest
// even). The one allowance: an E4M3 zero may carry either sign (0x00 or 0x80), both zero.
// Slots nobody writes keep their poison. Vectors of every scale, and an all-zero one (scale 1).
void check_rope_quantized(int heads, int kv_heads, int d, DType format) {
  const int tokens = 4;
  const int row = (heads + 2 * kv_heads) * d;
  auto qkv = random_bf16(static_cast<size_t>(tokens * row), 11);
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> log_scale(-6.0f, 6.0f);
  for (int t = 0; t < tokens; ++t) {
    for (int h = 0; h < heads + 2 * kv_heads; ++h) {
      const float m = std::exp2(log_scale(rng));  // 2^-6 .. 2^6 times a normal sample
      for (int i = 0; i < d; ++i) {
        const size_t at = static_cast<size_t>(t * row + h * d + i);
        qkv.bits[at] = float_to_bf16(m * qkv.values[at]);
        qkv.values[at] = bf16_to_float(qkv.bits[at]);
      }
    }
  }
  // Token 2's first value head is all zeros.
  for (int i = 0; i < d; ++i) {
    const size_t at = static_cast<size_t>(2 * row + (heads + kv_heads) * d + i);
    qkv.bits[at] = 0;
    qkv.values[at] = 0.0f;
  }
  RopeParams rope;
  rope.theta = 500000;
  const auto inv_freq_d = rope_inverse_frequencies(rope, d);
  std::vector<float> inv_freq(inv_freq_d.begin(), inv_freq_d.end());
  const std::vector<int32_t> positions = {0, 7, 3000, 131000}, slots = {5, 0, 9, 2};
  const int num_slots = 11;
  DeviceBuffer<float> df(inv_freq.size());
  df.upload(inv_freq.data(), inv_freq.size());
  DeviceBuffer<int32_t> dp(tokens), ds(tokens);
  dp.upload(positions.data(), tokens);
  ds.upload(slots.data(), tokens);

  // The bf16 run: the reference's keys.
  auto q_bf16 = to_device(qkv.bits);
  const size_t elements = static_cast<size_t>(num_slots) * kv_heads * d;
  DeviceBuffer<bf16> k_bf16(elements), v_bf16(elements);
  cuda::rope_kv_write(q_bf16.data(), tokens, heads, kv_heads, d, dp.data(), ds.data(), df.data(),
                      {DType::bf16, k_bf16.data(), v_bf16.data(), nullptr, nullptr}, nullptr);
  const auto keys = to_host(k_bf16);

  // The quantized run, over poisoned buffers.
  auto q_quant = to_device(qkv.bits);
  DeviceBuffer<uint8_t> k_q(elements), v_q(elements);
  DeviceBuffer<float> k_s(static_cast<size_t>(num_slots) * kv_heads), v_s(k_s.size());
  INFERLAB_CUDA_CHECK(cudaMemset(k_q.data(), 0xa5, k_q.bytes()));
  INFERLAB_CUDA_CHECK(cudaMemset(v_q.data(), 0xa5, v_q.bytes()));
  INFERLAB_CUDA_CHECK(cudaMemset(k_s.data(), 0x7f, k_s.bytes()));
  INFERLAB_CUDA_CHECK(cudaMemset(v_s.data(), 0x7f, v_s.bytes()));
  cuda::rope_kv_write(q_quant.data(), tokens, heads, kv_heads, d, dp.data(), ds.data(), df.data(),
                      {format, k_q.data(), v_q.data(), k_s.data(), v_s.data()}, nullptr);
  INFERLAB_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<uint16_t> bits_bf16(q_bf16.size()), bits_quant(q_quant.size());
  q_bf16.download(reinterpret_cast<bf16*>(bits_bf16.data()), bits_bf16.size());
  q_quant.download(reinterpret_cast<bf16*>(bits_quant.data()), bits_quant.size());
  EXPECT_EQ(bits_quant, bits_bf16) << "queries rotated in place alike, the rest left as it was";
  std::vector<uint8_t> k_bytes(elements), v_bytes(elements);
  std::vector<float> k_scales(k_s.size()), v_scales(v_s.size());
  k_q.download(k_bytes.data(), elements);
  v_q.download(v_bytes.data(), elements);
  k_s.download(k_scales.data(), k_scales.size());
  v_s.download(v_scales.data(), v_scales.size());

  float poison_scale;
  const uint32_t poison_bits = 0x7f7f7f7fu;
  std::memcpy(&poison_scale, &poison_bits, sizeof poison_scale);
  auto same_byte = [&](uint8_t got, uint8_t want) {
    return got == want || (format == DType::fp8 && (got & 0x7f) == 0 && (want & 0x7f) == 0);
  };
  int bad = 0;
  std::vector<uint8_t> want(static_cast<size_t>(d));
  for (int slot = 0; slot < num_slots; ++slot) {
    int t = -1;
    for (int i = 0; i < tokens; ++i) t = slots[i] == slot ? i : t;
    for (int h = 0; h < kv_heads; ++h) {
      const size_t vector = static_cast<size_t>(slot * kv_heads + h);
      for (int key = 0; key < 2; ++key) {
        const std::vector<uint8_t>& got = key ? k_bytes : v_bytes;
        const float got_scale = (key ? k_scales : v_scales)[vector];
        if (t < 0) {  // nobody's slot: untouched
          for (int i = 0; i < d; ++i) bad += got[vector * d + i] != 0xa5 ? 1 : 0;
          bad += got_scale != poison_scale ? 1 : 0;
          continue;
        }
        std::vector<float> x(static_cast<size_t>(d));
        for (int i = 0; i < d; ++i) {
          x[i] = key ? keys[vector * d + i]
                     : qkv.values[static_cast<size_t>(t * row + (heads + kv_heads + h) * d + i)];
        }
        const float scale =
            format == DType::int8
                ? quantize_row_int8(x.data(), d, reinterpret_cast<int8_t*>(want.data()))
                : quantize_row_e4m3(x.data(), d, want.data());
        if (got_scale != scale && ++bad <= 5) {
          ADD_FAILURE() << (key ? "key" : "value") << " scale, token " << t << " head " << h << ": "
                        << got_scale << " vs " << scale;
        }
        for (int i = 0; i < d; ++i) {
          if (!same_byte(got[vector * d + i], want[i]) && ++bad <= 5) {
            ADD_FAILURE() << (key ? "key" : "value") << " token " << t << " head " << h << " at "
                          << i << ": " << int{got[vector * d + i]} << " vs " << int{want[i]}
                          << " (x " << x[i] << ", scale " << scale << ")";
          }
        }
      }
    }
  }
  EXPECT_EQ(bad, 0) << dtype_name(format) << " heads " << heads << "/" << kv_heads << " d " << d;
  // The zero vector's scale is 1.
  EXPECT_EQ(v_scales[static_cast<size_t>(slots[2] * kv_heads)], 1.0f);
}

TEST(CudaLayerKernels, RopeQuantizedCacheMatchesHostQuantization) {
  REQUIRE_GPU();
  for (DType format : {DType::int8, DType::fp8}) {
    check_rope_quantized(4, 2, 128, format);
    check_rope_quantized(32, 8, 128, format);  // Llama 3 8B: 12 blocks of 4 head vectors
    check_rope_quantized(6, 6, 64, format);
    check_rope_quantized(2, 1, 256, format);
    check_rope_quantized(3, 1, 80, format);  // head_dim 80: lanes past the pairs sit out
  }
}

TEST(CudaLayerKernels, RopeRejectsAQuantizedCacheWithoutScales) {
  REQUIRE_GPU();
  DeviceBuffer<bf16> qkv(4 * 128);
  DeviceBuffer<uint8_t> k(128), v(128);
  EXPECT_THROW(cuda::rope_kv_write(qkv.data(), 1, 2, 1, 128, nullptr, nullptr, nullptr,
                                   {DType::int8, k.data(), v.data(), nullptr, nullptr}, nullptr),
               std::invalid_argument);
  EXPECT_THROW(cuda::rope_kv_write(qkv.data(), 1, 2, 1, 128, nullptr, nullptr, nullptr,
                                   {DType::fp16, k.data(), v.data(), nullptr, nullptr}, nullptr),
               std::invalid_argument);
}

TEST(CudaLayerKernels, SiluMulReadsBothHalvesOfTheFusedOutput) {
  REQUIRE_GPU();
  for (int inter : {8192, 44}) {
    const int tokens = 3;
    auto gu = random_bf16(static_cast<size_t>(tokens * 2 * inter), 5, 0, 3);
    auto dgu = to_device(gu.bits);
    DeviceBuffer<bf16> out(static_cast<size_t>(tokens * inter));
    cuda::silu_mul_halves(dgu.data(), tokens, inter, out.data(), nullptr);
    std::vector<float> want;
    for (int t = 0; t < tokens; ++t) {
      std::vector<float> gate(gu.values.begin() + t * 2 * inter,
                              gu.values.begin() + t * 2 * inter + inter);
      cpu::silu_mul(gate.data(), &gu.values[t * 2 * inter + inter], inter);
      want.insert(want.end(), gate.begin(), gate.end());
    }
    expect_close_bf16(to_host(out), want);
  }
}

TEST(CudaLayerKernels, EmbeddingAndRowGatherCopyRows) {
  REQUIRE_GPU();
  const int vocab = 50, hidden = 72;
  auto table = random_bf16(static_cast<size_t>(vocab * hidden), 6);
  auto dt = to_device(table.bits);
  const std::vector<int32_t> ids = {49, 0, 17, 17};
  DeviceBuffer<int32_t> di(ids.size());
  di.upload(ids.data(), ids.size());
  DeviceBuffer<bf16> out(ids.size() * hidden);
  cuda::embedding_gather(dt.data(), di.data(), 4, hidden, out.data(), nullptr);
  auto got = to_host(out);
  for (size_t t = 0; t < ids.size(); ++t) {
    for (int i = 0; i < hidden; ++i)
      ASSERT_EQ(got[t * hidden + i], table.values[ids[t] * hidden + i]);
  }
  // The LM head's row gather: rows 3 and 0 of that output (ids 17 and 49).
  const std::vector<int32_t> pick = {3, 0};
  DeviceBuffer<int32_t> dpick(2);
  dpick.upload(pick.data(), 2);
  DeviceBuffer<bf16> rows(2 * hidden);
  cuda::gather_rows(out.data(), dpick.data(), 2, hidden, rows.data(), nullptr);
  auto gathered = to_host(rows);
  for (int i = 0; i < hidden; ++i) {
    ASSERT_EQ(gathered[i], table.values[17 * hidden + i]);
    ASSERT_EQ(gathered[hidden + i], table.values[49 * hidden + i]);
  }
}

}  // namespace
}  // namespace inferlab::engine

#else
TEST(CudaLayerKernels, NeedsACudaBuild) {
  GTEST_SKIP() << "built without CUDA";
}
#endif
