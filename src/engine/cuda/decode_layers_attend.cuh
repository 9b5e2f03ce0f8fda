#pragma once
// The persistent decode kernel's attention stage (decode_layers_hopper.cu): RoPE, the new key
// and value into the paged cache, split-context partial softmaxes, and their merge by the last
// item of each KV head. Device code for sm_90a only. C++17.
#include <cuda_bf16.h>

#include <cstdint>

#include "engine/cuda/decode_layers_common.cuh"
#include "engine/cuda/gemv_rows.cuh"
#include "engine/cuda/rope_device.cuh"

namespace inferlab::engine::cuda::persistent_decode {

#ifdef INFERLAB_HOPPER_DEVICE_CODE
__device__ __forceinline__ int64_t cache_slot(const Args& a, int position) {
  const int bs = a.p.shape.block_size;
  return static_cast<int64_t>(__ldg(a.p.block_table + position / bs)) * bs + position % bs;
}

// Stage B for one layer: attention items (KV head, span of positions), partial softmaxes, and
// the last item of a KV head merging them into attn. Per pass of kPass positions (16 KB of
// values): kSplit threads per position find its cache slot, load their quarter (or half) of its
// key and value at once (the whole pass's loads in flight: two dependent trips, the block table
// then the cache), score the key against every query head of the group and put the value in
// shared memory; a warp per head updates the running maximum and sum; then threads (pair of
// dimensions, group of positions) sum P·V from shared memory, reduced over the position groups
// once the item is done.
template <int D>
__device__ void attend(const Args& a, unsigned char* smem, const PersistentDecodeLayer& w) {
  constexpr int kPairs = D / 2, kGroups = kConsumers / kPairs;  // P·V: pair, position group
  constexpr int kPass = kPassBytes / (2 * D), kSplit = kConsumers / kPass, kShare = D / kSplit;
  const PersistentDecodeShape& s = a.p.shape;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int kv = s.num_kv_heads, group = s.num_heads / kv;
  const int q_dim = s.num_heads * D, kv_dim = kv * D;
  const int ctx = __ldg(a.p.context_len), newest = ctx - 1;
  const float position = static_cast<float>(__ldg(a.p.position));
  const int64_t new_slot = __ldg(a.p.slot);
  int per_head = a.p.splits > 0 ? a.p.splits : max(1, static_cast<int>(gridDim.x) / kv);
  per_head = min(per_head, kMaxChunks);
  const int span = align_up(ceil_div(ctx, per_head), 16);
  const int chunks = ceil_div(ctx, span);

  float* misc = reinterpret_cast<float*>(smem + a.l.misc);
  float* m_run = misc + 16;
  float* l_run = misc + 24;
  float* rescale = misc + 32;
  int* last = reinterpret_cast<int*>(misc + 40);
  float* q_s = reinterpret_cast<float*>(smem + a.l.work);              // [group][D]
  float* scores = q_s + group * D;                                     // [group][kPass]
  float* sums = scores + group * kPass;                                // [kGroups][group][D]
  bf16* values = reinterpret_cast<bf16*>(sums + kGroups * group * D);  // [kPass][D]
  bf16* k_new = values + kPass * D;
  bf16* v_new = k_new + D;
  const int pair = threadIdx.x % kPairs, position_group = threadIdx.x / kPairs;

  for (int item = blockIdx.x; item < kv * chunks; item += gridDim.x) {
    const int g = item / chunks, c = item % chunks;
    const int start = c * span, end = min(ctx, start + span);
    for (int i = threadIdx.x; i < group * D / 2; i += kConsumers) {
      const int r = i / (D / 2), j = i % (D / 2);
      const bf16* q = a.p.qkv + (g * group + r) * D;
      float cs, sn;
      rope::angle(position, __ldg(a.p.inv_freq + j), cs, sn);
      bf16 y1, y2;
      rope::rotate(__bfloat162float(__ldcg(q + j)), __bfloat162float(__ldcg(q + j + D / 2)), cs, sn,
                   y1, y2);
      q_s[r * D + j] = __bfloat162float(y1);
      q_s[r * D + j + D / 2] = __bfloat162float(y2);
    }
    if (end == ctx) {  // the new token's key and value: into the cache, and kept here
      for (int j = threadIdx.x; j < D / 2; j += kConsumers) {
        const bf16* k = a.p.qkv + q_dim + g * D;
        float cs, sn;
        rope::angle(position, __ldg(a.p.inv_freq + j), cs, sn);
        bf16 y1, y2;
        rope::rotate(__bfloat162float(__ldcg(k + j)), __bfloat162float(__ldcg(k + j + D / 2)), cs,
                     sn, y1, y2);
        k_new[j] = y1;
        k_new[j + D / 2] = y2;
        w.k_cache[new_slot * kv_dim + g * D + j] = y1;
        w.k_cache[new_slot * kv_dim + g * D + j + D / 2] = y2;
      }
      for (int j = threadIdx.x; j < D; j += kConsumers) {
        const bf16 v = __ldcg(a.p.qkv + q_dim + kv_dim + g * D + j);
        v_new[j] = v;
        w.v_cache[new_slot * kv_dim + g * D + j] = v;
      }
    }
    if (threadIdx.x < group) {
      m_run[threadIdx.x] = -INFINITY;
      l_run[threadIdx.x] = 0.0f;
    }
    float out[kMaxGroup][2];
#pragma unroll
    for (int r = 0; r < kMaxGroup; ++r) out[r][0] = out[r][1] = 0.0f;
    consumer_sync();

    for (int sub = start; sub < end; sub += kPass) {
      const int n = min(kPass, end - sub);
      {  // scores and values: kSplit threads per position, kShare elements each
        // Vectors split, split + kSplit, ... of the row: the kSplit threads of a position read
        // consecutive 16 bytes of the cache and different banks of the queries.
        const int i = threadIdx.x / kSplit, split = threadIdx.x % kSplit;
        const int p = sub + min(i, n - 1);  // past the end: a repeat, not stored
        const int64_t slot = p == newest ? -1 : cache_slot(a, p);
        const bf16* k = slot < 0 ? k_new : w.k_cache + slot * kv_dim + g * D;
        const bf16* v = slot < 0 ? v_new : w.v_cache + slot * kv_dim + g * D;
        uint4 kv_k[kShare / 8], kv_v[kShare / 8];
#pragma unroll
        for (int e = 0; e < kShare / 8; ++e) {
          kv_k[e] = *reinterpret_cast<const uint4*>(k + 8 * (e * kSplit + split));
          kv_v[e] = *reinterpret_cast<const uint4*>(v + 8 * (e * kSplit + split));
        }
        float dot[kMaxGroup];
#pragma unroll
        for (int r = 0; r < kMaxGroup; ++r) dot[r] = 0.0f;
#pragma unroll
        for (int e = 0; e < kShare / 8; ++e) {
          float kf[8];
          gemv::unpack_bf16(kv_k[e], kf);
#pragma unroll
          for (int r = 0; r < kMaxGroup; ++r) {
            if (r < group) {
#pragma unroll
              for (int j = 0; j < 8; ++j)
                dot[r] = fmaf(q_s[r * D + 8 * (e * kSplit + split) + j], kf[j], dot[r]);
            }
          }
        }
#pragma unroll
        for (int r = 0; r < kMaxGroup; ++r) {  // over the kSplit lanes of the position
#pragma unroll
          for (int offset = kSplit / 2; offset > 0; offset /= 2) {
            dot[r] += __shfl_xor_sync(0xffffffffu, dot[r], offset);
          }
        }
        if (i < n) {
#pragma unroll
          for (int e = 0; e < kShare / 8; ++e) {
            *reinterpret_cast<uint4*>(values + i * D + 8 * (e * kSplit + split)) = kv_v[e];
          }
          if (split == 0) {
#pragma unroll
            for (int r = 0; r < kMaxGroup; ++r) {
              if (r < group) scores[r * kPass + i] = dot[r] * a.p.softmax_scale;
            }
          }
        }
      }
      consumer_sync();
      // The running maximum and sum: a warp per query head.
      for (int r = warp; r < group; r += kConsumerWarps) {
        float top = -INFINITY;
        for (int i = lane; i < n; i += 32) top = fmaxf(top, scores[r * kPass + i]);
        top = gemv::warp_max(top);
        const float m_new = fmaxf(m_run[r], top);
        float sum = 0.0f;
        for (int i = lane; i < n; i += 32) {
          const float e = expf(scores[r * kPass + i] - m_new);
          scores[r * kPass + i] = e;
          sum += e;
        }
        sum = gemv::warp_sum(sum);
        if (lane == 0) {
          const float factor = expf(m_run[r] - m_new);  // 0 on the first pass (−inf)
          rescale[r] = factor;
          l_run[r] = l_run[r] * factor + sum;
          m_run[r] = m_new;
        }
      }
      consumer_sync();
      // P·V: this thread's pair of dimensions over positions position_group, + kGroups, ...
#pragma unroll
      for (int r = 0; r < kMaxGroup; ++r) {
        if (r < group) {
          out[r][0] *= rescale[r];
          out[r][1] *= rescale[r];
        }
      }
      for (int i = position_group; i < n; i += kGroups) {
        const float2 vf =
            __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(values + i * D + 2 * pair));
#pragma unroll
        for (int r = 0; r < kMaxGroup; ++r) {
          if (r < group) {
            const float pr = scores[r * kPass + i];
            out[r][0] = fmaf(pr, vf.x, out[r][0]);
            out[r][1] = fmaf(pr, vf.y, out[r][1]);
          }
        }
      }
      consumer_sync();
    }

    // This item's partial: per query head D sums (the position groups' added in order), then its
    // maximum and its sum.
#pragma unroll
    for (int r = 0; r < kMaxGroup; ++r) {
      if (r < group) {
        sums[(position_group * group + r) * D + 2 * pair] = out[r][0];
        sums[(position_group * group + r) * D + 2 * pair + 1] = out[r][1];
      }
    }
    consumer_sync();
    float* part = a.p.partials + (static_cast<int64_t>(g) * kMaxChunks + c) * group * (D + 2);
    for (int idx = threadIdx.x; idx < group * D; idx += kConsumers) {
      float total = 0.0f;
      for (int pg = 0; pg < kGroups; ++pg) total += sums[pg * group * D + idx];
      part[(idx / D) * (D + 2) + idx % D] = total;
    }
    if (threadIdx.x < group) {
      part[threadIdx.x * (D + 2) + D] = m_run[threadIdx.x];
      part[threadIdx.x * (D + 2) + D + 1] = l_run[threadIdx.x];
    }
    __threadfence();
    consumer_sync();
    if (threadIdx.x == 0)
      *last = atomicAdd(a.p.counters + 2 + g, 1u) == static_cast<unsigned>(chunks - 1);
    consumer_sync();
    if (*last) {  // every item of KV head g has written its partial: merge them
      __threadfence();
      const float* head_parts =
          a.p.partials + static_cast<int64_t>(g) * kMaxChunks * group * (D + 2);
      // Every item's maximum and sum in one trip (the P·V sums' room holds group · 512 floats,
      // chunks ≤ kMaxChunks = 256), then a warp per head turns them into the items' weights.
      float* maxima = sums;
      float* weights = sums + group * chunks;
      for (int idx = threadIdx.x; idx < group * chunks; idx += kConsumers) {
        const int r = idx / chunks, j = idx % chunks;
        maxima[idx] = __ldcg(head_parts + (j * group + r) * (D + 2) + D);
        weights[idx] = __ldcg(head_parts + (j * group + r) * (D + 2) + D + 1);
      }
      consumer_sync();
      for (int r = warp; r < group; r += kConsumerWarps) {
        float top = -INFINITY;
        for (int j = lane; j < chunks; j += 32) top = fmaxf(top, maxima[r * chunks + j]);
        top = gemv::warp_max(top);
        float total = 0.0f;
        for (int j = lane; j < chunks; j += 32) {
          total += weights[r * chunks + j] * expf(maxima[r * chunks + j] - top);
        }
        total = gemv::warp_sum(total);
        __syncwarp();
        for (int j = lane; j < chunks; j += 32) {
          weights[r * chunks + j] = expf(maxima[r * chunks + j] - top) / total;
        }
      }
      consumer_sync();
      for (int idx = threadIdx.x; idx < group * D; idx += kConsumers) {
        const int r = idx / D, d = idx % D;
        float value = 0.0f;
#pragma unroll 8
        for (int j = 0; j < chunks; ++j) {  // independent loads: eight in flight
          value = fmaf(__ldcg(head_parts + (j * group + r) * (D + 2) + d), weights[r * chunks + j],
                       value);
        }
        a.p.attn[(g * group + r) * D + d] = __float2bfloat16(value);
      }
      if (threadIdx.x == 0) a.p.counters[2 + g] = 0;  // for the next layer (after two barriers)
    }
    consumer_sync();  // the scratch is the next item's
  }
}
#endif  // INFERLAB_HOPPER_DEVICE_CODE

}  // namespace inferlab::engine::cuda::persistent_decode
