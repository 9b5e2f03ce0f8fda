// The CUDA mixture-of-experts kernels against references computed here on the same bf16 values:
// the routing against engine/cpu/moe.hpp's route_token on the bf16-rounded router logits, the
// sort's invariants, the experts' products with transformers' roundings, and the combine bit
// for bit. Shapes: Mixtral's routing (8 experts, top 2) at 1, 5 and 37 tokens, Qwen-MoE's
// (64 experts, top 6, no renormalisation) and every expert chosen (3 of 3). Without a GPU the
// tests skip.
#include <gtest/gtest.h>

#include "engine/cuda_backend.hpp"

#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "engine/bf16.hpp"
#include "engine/cpu/moe.hpp"
#include "engine/cuda/bf16_test_data.hpp"
#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/moe_kernels.hpp"
#include "model/engine_moe_rules.hpp"

namespace inferlab::engine {
namespace {

using bf16 = __nv_bfloat16;
using cuda::DeviceBuffer;

// After the device has finished: `count` values from device memory.
template <typename T>
std::vector<T> download(const T* device, size_t count) {
  std::vector<T> host(count);
  INFERLAB_CUDA_CHECK(cudaDeviceSynchronize());
  INFERLAB_CUDA_CHECK(cudaMemcpy(host.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost));
  return host;
}

template <typename T>
DeviceBuffer<T> upload_values(const std::vector<T>& values) {
  DeviceBuffer<T> buffer(values.size());
  buffer.upload(values.data(), values.size());
  return buffer;
}

struct Shape {
  int tokens, hidden, inter, experts, top_k;
  bool renormalize;
};

// The sort of `ids` as moe_sort_by_expert left it in `routing`: offsets count each expert's
// slots; sorted slots grouped by expert, increasing within one (stable); slot_position its
// inverse.
void check_sort(const std::vector<int32_t>& ids, int experts, const cuda::MoeRouting& routing) {
  const size_t slots = ids.size();
  const auto offsets = download(routing.expert_offsets, static_cast<size_t>(experts) + 1);
  const auto sorted = download(routing.sorted_slots, slots);
  const auto position = download(routing.slot_position, slots);
  ASSERT_EQ(offsets.front(), 0);
  ASSERT_EQ(offsets.back(), static_cast<int32_t>(slots));
  for (int j = 0; j < experts; ++j) {
    const auto count = std::count(ids.begin(), ids.end(), j);
    ASSERT_EQ(offsets[static_cast<size_t>(j) + 1] - offsets[static_cast<size_t>(j)], count);
    for (int p = offsets[static_cast<size_t>(j)]; p < offsets[static_cast<size_t>(j) + 1]; ++p) {
      ASSERT_EQ(ids[static_cast<size_t>(sorted[static_cast<size_t>(p)])], j);
      if (p > offsets[static_cast<size_t>(j)]) {
        ASSERT_LT(sorted[static_cast<size_t>(p) - 1], sorted[static_cast<size_t>(p)]);
      }
      ASSERT_EQ(position[static_cast<size_t>(sorted[static_cast<size_t>(p)])], p);
    }
  }
}

// One MoE layer's kernels end to end on random bf16 inputs, each stage checked.
void check_layer(const Shape& shape, unsigned seed) {
  const int t = shape.tokens, h = shape.hidden, n = shape.inter, e = shape.experts, k = shape.top_k,
            slots = t * k;
  const Bf16Data x = random_bf16(static_cast<size_t>(t) * h, seed, 0.0f, 1.0f);
  const Bf16Data router =
      random_bf16(static_cast<size_t>(e) * h, seed + 1, 0.0f, 0.5f / std::sqrt(h));
  const Bf16Data gate_up =
      random_bf16(static_cast<size_t>(e) * 2 * n * h, seed + 2, 0.0f, 1.0f / std::sqrt(h));
  const Bf16Data down =
      random_bf16(static_cast<size_t>(e) * h * n, seed + 3, 0.0f, 1.0f / std::sqrt(n));
  auto x_d = to_device(x.bits), router_d = to_device(router.bits);
  auto gate_up_d = to_device(gate_up.bits), down_d = to_device(down.bits);
  DeviceBuffer<int32_t> ints(static_cast<size_t>(3 * slots + e + 1));
  DeviceBuffer<float> weights(static_cast<size_t>(slots));
  cuda::MoeRouting routing;
  routing.expert_ids = ints.data();
  routing.sorted_slots = ints.data() + slots;
  routing.slot_position = ints.data() + 2 * slots;
  routing.expert_offsets = ints.data() + 3 * slots;
  routing.expert_weights = weights.data();
  DeviceBuffer<bf16> act(static_cast<size_t>(slots) * n), y(static_cast<size_t>(slots) * h);
  DeviceBuffer<bf16> rows(static_cast<size_t>(slots) * h), out(static_cast<size_t>(t) * h);

  cuda::moe_route(x_d.data(), router_d.data(), t, h, e, k, shape.renormalize, routing, nullptr);
  cuda::moe_sort_by_expert(slots, e, routing, nullptr);
  cuda::moe_expert_gate_up(x_d.data(), gate_up_d.data(), slots, k, h, n, routing, act.data(),
                           nullptr);
  cuda::moe_expert_down(act.data(), down_d.data(), slots, h, n, routing, y.data(), nullptr);
  cuda::moe_gather_slots(x_d.data(), slots, k, h, routing, rows.data(), nullptr);
  cuda::moe_combine(y.data(), true, t, k, h, routing, out.data(), nullptr);

  // Routing: the CPU's choice on the bf16 router logits, weights within fp32 rounding.
  const auto ids = download(routing.expert_ids, static_cast<size_t>(slots));
  const auto chosen_weights = download(routing.expert_weights, static_cast<size_t>(slots));
  for (int token = 0; token < t; ++token) {
    std::vector<float> logits(static_cast<size_t>(e));
    for (int j = 0; j < e; ++j) {
      logits[static_cast<size_t>(j)] =
          round_bf16(dot(&x.values[static_cast<size_t>(token) * h],
                         &router.values[static_cast<size_t>(j) * h], h));
    }
    const cpu::ExpertChoice choice = cpu::route_token(logits.data(), e, k, shape.renormalize);
    for (int j = 0; j < k; ++j) {
      const size_t s = static_cast<size_t>(token * k + j);
      EXPECT_EQ(ids[s], choice.experts[static_cast<size_t>(j)]) << "token " << token;
      EXPECT_NEAR(chosen_weights[s], choice.weights[static_cast<size_t>(j)], 2e-6)
          << "token " << token;
    }
  }
  // The split routing (router logits over many blocks, then one warp per token selecting: few
  // tokens with a scratch buffer) picks the same experts with the same weights, bit for bit.
  if (engine_moe_route_split(t, e)) {
    DeviceBuffer<int32_t> split_ids(static_cast<size_t>(slots));
    DeviceBuffer<float> split_weights(static_cast<size_t>(slots));
    DeviceBuffer<float> router_logits(static_cast<size_t>(t) * e);
    cuda::MoeRouting split = routing;
    split.expert_ids = split_ids.data();
    split.expert_weights = split_weights.data();
    split.router_logits = router_logits.data();
    cuda::moe_route(x_d.data(), router_d.data(), t, h, e, k, shape.renormalize, split, nullptr);
    EXPECT_EQ(download(split.expert_ids, static_cast<size_t>(slots)), ids);
    EXPECT_EQ(download(split.expert_weights, static_cast<size_t>(slots)), chosen_weights);
  }
  // The prefill's selection (moe_select) from fp32 logits, as a cuBLASLt GEMM leaves them (not
  // rounded): rounded to bf16 first, it picks what the CPU picks from those logits rounded.
  {
    std::vector<float> fp32_logits(static_cast<size_t>(t) * e);
    for (int token = 0; token < t; ++token) {
      for (int j = 0; j < e; ++j) {
        fp32_logits[static_cast<size_t>(token) * e + j] =
            static_cast<float>(dot(&x.values[static_cast<size_t>(token) * h],
                                   &router.values[static_cast<size_t>(j) * h], h));
      }
    }
    auto logits_d = upload_values(fp32_logits);
    DeviceBuffer<int32_t> select_ids(static_cast<size_t>(slots));
    DeviceBuffer<float> select_weights(static_cast<size_t>(slots));
    cuda::MoeRouting select = routing;
    select.expert_ids = select_ids.data();
    select.expert_weights = select_weights.data();
    select.router_logits = logits_d.data();
    cuda::moe_select(t, e, k, shape.renormalize, select, nullptr);
    const auto got_ids = download(select.expert_ids, static_cast<size_t>(slots));
    const auto got_weights = download(select.expert_weights, static_cast<size_t>(slots));
    for (int token = 0; token < t; ++token) {
      std::vector<float> rounded(static_cast<size_t>(e));
      for (int j = 0; j < e; ++j) {
        rounded[static_cast<size_t>(j)] =
            round_bf16(fp32_logits[static_cast<size_t>(token) * e + j]);
      }
      const cpu::ExpertChoice choice = cpu::route_token(rounded.data(), e, k, shape.renormalize);
      for (int j = 0; j < k; ++j) {
        const size_t s = static_cast<size_t>(token * k + j);
        EXPECT_EQ(got_ids[s], choice.experts[static_cast<size_t>(j)]) << "token " << token;
        EXPECT_NEAR(got_weights[s], choice.weights[static_cast<size_t>(j)], 2e-6)
            << "token " << token;
      }
    }
  }
  check_sort(ids, e, routing);
  const auto sorted = download(routing.sorted_slots, static_cast<size_t>(slots));
  // Experts, slot by slot: transformers' roundings; the GPU's fp32 sums differ in order, so a
  // value may land one bf16 step away (2^-8 relative) from the reference's.
  const auto act_h = to_host(act), y_h = to_host(y), rows_h = to_host(rows), out_h = to_host(out);
  // The grouped kernels (each expert's weights once for its slots, 8 at a time) give the slot
  // kernels' outputs bit for bit, slot by slot.
  DeviceBuffer<bf16> grouped_act(static_cast<size_t>(slots) * n);
  DeviceBuffer<bf16> grouped_y(static_cast<size_t>(slots) * h);
  cuda::moe_grouped_gate_up(x_d.data(), gate_up_d.data(), e, k, h, n, routing, grouped_act.data(),
                            nullptr);
  cuda::moe_grouped_down(act.data(), down_d.data(), e, h, n, routing, grouped_y.data(), nullptr);
  EXPECT_EQ(to_host(grouped_act), act_h);
  EXPECT_EQ(to_host(grouped_y), y_h);
  double act_error = 0, act_scale = 0, y_error = 0, y_scale = 0;
  for (int slot = 0; slot < slots; ++slot) {
    const int token = slot / k, expert = ids[static_cast<size_t>(slot)];
    const float* in = &x.values[static_cast<size_t>(token) * h];
    for (int i = 0; i < n; ++i) {
      const float* g_row = &gate_up.values[(static_cast<size_t>(expert) * 2 * n + i) * h];
      const float* u_row = &gate_up.values[(static_cast<size_t>(expert) * 2 * n + n + i) * h];
      const float g = round_bf16(dot(g_row, in, h)), u = round_bf16(dot(u_row, in, h));
      const float silu = round_bf16(g / (1.0 + std::exp(-double{g})));
      const double ref = round_bf16(double{silu} * u);
      act_error = std::max(act_error, std::abs(act_h[static_cast<size_t>(slot) * n + i] - ref));
      act_scale = std::max(act_scale, std::abs(ref));
    }
    // down on the GPU's own act row, so the two checks stay separate.
    for (int r = 0; r < h; ++r) {
      const float* w = &down.values[(static_cast<size_t>(expert) * h + r) * n];
      const double ref = round_bf16(dot(w, &act_h[static_cast<size_t>(slot) * n], n));
      y_error = std::max(y_error, std::abs(double{y_h[static_cast<size_t>(slot) * h + r]} - ref));
      y_scale = std::max(y_scale, std::abs(ref));
    }
  }
  EXPECT_LE(act_error, act_scale * 0.01);
  EXPECT_LE(y_error, y_scale * 0.01);
  // The GEMM form's gather: sorted position p holds slot sorted[p]'s token's input.
  for (int p = 0; p < slots; ++p) {
    const float* in = &x.values[static_cast<size_t>(sorted[static_cast<size_t>(p)] / k) * h];
    for (int i = 0; i < h; ++i) {
      ASSERT_EQ(rows_h[static_cast<size_t>(p) * h + i], in[i]) << "gathered row " << p;
    }
  }
  // Combine: bit for bit, from the GPU's expert outputs.
  for (int token = 0; token < t; ++token) {
    std::vector<int> order(static_cast<size_t>(k));
    for (int j = 0; j < k; ++j) order[static_cast<size_t>(j)] = j;
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      return ids[static_cast<size_t>(token * k + a)] < ids[static_cast<size_t>(token * k + b)];
    });
    for (int i = 0; i < h; ++i) {
      float sum = 0;
      for (int j : order) {
        const size_t s = static_cast<size_t>(token * k + j);
        const float weight = round_bf16(chosen_weights[s]);
        const float value = y_h[s * h + i];
        sum = round_bf16(sum + round_bf16(weight * value));  // float ops, as the kernel's
      }
      ASSERT_EQ(out_h[static_cast<size_t>(token) * h + i], sum) << "token " << token << " i " << i;
    }
  }
  // The GEMM form's outputs sit at sorted positions: the combine reading them there gives the
  // same bits.
  std::vector<uint16_t> y_by_position(y_h.size());
  for (int p = 0; p < slots; ++p) {
    for (int i = 0; i < h; ++i) {
      y_by_position[static_cast<size_t>(p) * h + i] =
          float_to_bf16(y_h[static_cast<size_t>(sorted[static_cast<size_t>(p)]) * h + i]);
    }
  }
  auto y_positions = to_device(y_by_position);
  DeviceBuffer<bf16> out_positions(static_cast<size_t>(t) * h);
  cuda::moe_combine(y_positions.data(), false, t, k, h, routing, out_positions.data(), nullptr);
  EXPECT_EQ(to_host(out_positions), out_h);
}

#define REQUIRE_GPU() \
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU"

TEST(MoeKernels, MixtralRoutingAtDecodeAndPrefillSizes) {
  REQUIRE_GPU();
  for (int tokens : {1, 5, 37}) check_layer({tokens, 256, 384, 8, 2, true}, 10 + tokens);
}

TEST(MoeKernels, QwenRoutingWithoutRenormalisation) {
  REQUIRE_GPU();
  check_layer({40, 128, 64, 64, 6, false}, 3);
}

// Qwen3-MoE's router: 128 experts, top 8, renormalised (norm_topk_prob), at decode sizes (the
// split routing) and past them (200 tokens: a block per token).
TEST(MoeKernels, Qwen3MoeRoutingOf128Experts) {
  REQUIRE_GPU();
  for (int tokens : {1, 32, 200}) check_layer({tokens, 256, 48, 128, 8, true}, 20 + tokens);
}

// 60 experts: the split router's last block of 8 experts holds 4 (its other warps leave early).
TEST(MoeKernels, SplitRouterWithAPartialLastBlock) {
  REQUIRE_GPU();
  check_layer({20, 128, 40, 60, 6, false}, 5);
}

TEST(MoeKernels, EveryExpertChosenAndManySlotsAnExpert) {
  REQUIRE_GPU();
  check_layer({50, 64, 40, 3, 3, true}, 4);  // 50 slots an expert
}

// The sort at a 4096-token prefill's size and past its warps' even runs (32 warps, each a run of
// whole 32-slot chunks): slot counts that leave the last runs partial or empty, and routing as a
// random-weight model's prompt routes it (most slots on one expert), or spread.
TEST(MoeKernels, SortOfManySlotsIsStable) {
  REQUIRE_GPU();
  std::mt19937 rng(7);
  for (int slots : {1, 31, 33, 1000, 1025, 32767, 32768}) {
    for (bool skewed : {true, false}) {
      const int experts = 128;
      std::vector<int32_t> ids(static_cast<size_t>(slots));
      for (auto& id : ids) {
        id = skewed && rng() % 8 != 0 ? 5 : static_cast<int32_t>(rng() % experts);
      }
      auto ids_d = upload_values(ids);
      DeviceBuffer<int32_t> ints(static_cast<size_t>(2 * slots + experts + 1));
      cuda::MoeRouting routing;
      routing.expert_ids = ids_d.data();
      routing.sorted_slots = ints.data();
      routing.slot_position = ints.data() + slots;
      routing.expert_offsets = ints.data() + 2 * slots;
      cuda::moe_sort_by_expert(slots, experts, routing, nullptr);
      SCOPED_TRACE(::testing::Message() << slots << " slots, skewed " << skewed);
      check_sort(ids, experts, routing);
    }
  }
}

TEST(MoeKernels, RoutingOutOfRangeIsRefused) {
  REQUIRE_GPU();
  cuda::MoeRouting routing;
  EXPECT_THROW(cuda::moe_route(nullptr, nullptr, 1, 64, 257, 2, true, routing, nullptr),
               std::invalid_argument);
  EXPECT_THROW(cuda::moe_route(nullptr, nullptr, 1, 64, 8, 9, true, routing, nullptr),
               std::invalid_argument);
  EXPECT_THROW(cuda::moe_select(1, 8, 2, true, routing, nullptr),
               std::invalid_argument);  // no logits
  EXPECT_THROW(cuda::moe_expert_gate_up(nullptr, nullptr, 2, 2, 60, 64, routing, nullptr, nullptr),
               std::invalid_argument);
}

}  // namespace
}  // namespace inferlab::engine

#else

TEST(MoeKernels, NeedCuda) {
  GTEST_SKIP() << "built without CUDA";
}

#endif
