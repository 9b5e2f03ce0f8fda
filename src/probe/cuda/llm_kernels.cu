#include <cuda_bf16.h>

#include <cmath>

#include "probe/cuda/cuda_util.cuh"
#include "probe/cuda/llm_kernels.cuh"

namespace inferlab::probe {

namespace {

using bf16 = __nv_bfloat16;

__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// Block-wide reduction over up to 32 warps.
template <bool kMax>
__device__ float block_reduce(float v) {
  __shared__ float partial[32];
  __shared__ float total;
  v = kMax ? warp_max(v) : warp_sum(v);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    int warps = (blockDim.x + 31) / 32;
    float w = threadIdx.x < warps ? partial[threadIdx.x] : (kMax ? -INFINITY : 0.0f);
    w = kMax ? warp_max(w) : warp_sum(w);
    if (threadIdx.x == 0) total = w;
  }
  __syncthreads();
  return total;
}

// 8 bf16 per 16-byte access.
union Pack {
  uint4 raw;
  bf16 h[8];
};

__global__ void rmsnorm_kernel(const bf16* x, const bf16* w, bf16* out, int hidden, float eps) {
  const uint4* row = reinterpret_cast<const uint4*>(x + size_t(blockIdx.x) * hidden);
  uint4* dst = reinterpret_cast<uint4*>(out + size_t(blockIdx.x) * hidden);
  const uint4* wv = reinterpret_cast<const uint4*>(w);
  const int vecs = hidden / 8;
  float squares = 0.0f;
  for (int i = threadIdx.x; i < vecs; i += blockDim.x) {
    Pack p{row[i]};
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      float f = __bfloat162float(p.h[j]);
      squares += f * f;
    }
  }
  float scale = rsqrtf(block_reduce<false>(squares) / hidden + eps);
  for (int i = threadIdx.x; i < vecs; i += blockDim.x) {
    Pack p{row[i]}, q{wv[i]}, o;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      o.h[j] = __float2bfloat16(__bfloat162float(p.h[j]) * scale * __bfloat162float(q.h[j]));
    }
    dst[i] = o.raw;
  }
}

__global__ void add_kernel(const uint4* a, const uint4* b, uint4* out, size_t vecs) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < vecs;
       i += size_t(gridDim.x) * blockDim.x) {
    Pack x{a[i]}, y{b[i]}, o;
#pragma unroll
    for (int j = 0; j < 8; ++j) o.h[j] = __hadd(x.h[j], y.h[j]);
    out[i] = o.raw;
  }
}

__global__ void silu_mul_kernel(const bf16* gate_up, bf16* out, int inter, size_t rows) {
  const int vecs = inter / 8;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < rows * vecs;
       i += size_t(gridDim.x) * blockDim.x) {
    size_t r = i / vecs, c = i % vecs;
    const uint4* row = reinterpret_cast<const uint4*>(gate_up + r * 2 * inter);
    Pack g{row[c]}, u{row[vecs + c]}, o;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      float gf = __bfloat162float(g.h[j]);
      o.h[j] = __float2bfloat16(gf / (1.0f + __expf(-gf)) * __bfloat162float(u.h[j]));
    }
    reinterpret_cast<uint4*>(out + r * inter)[c] = o.raw;
  }
}

__global__ void softmax_kernel(const bf16* x, bf16* out, int cols) {
  const bf16* row = x + size_t(blockIdx.x) * cols;
  bf16* dst = out + size_t(blockIdx.x) * cols;
  float m = -INFINITY;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) m = fmaxf(m, __bfloat162float(row[i]));
  m = block_reduce<true>(m);
  float s = 0.0f;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) s += __expf(__bfloat162float(row[i]) - m);
  float inv = 1.0f / block_reduce<false>(s);
  for (int i = threadIdx.x; i < cols; i += blockDim.x) {
    dst[i] = __float2bfloat16(__expf(__bfloat162float(row[i]) - m) * inv);
  }
}

__global__ void rope_kernel(bf16* x, int tokens, int heads, int dim, float theta) {
  const int half = dim / 2;
  size_t pairs = size_t(tokens) * heads * half;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < pairs;
       i += size_t(gridDim.x) * blockDim.x) {
    int j = static_cast<int>(i % half);
    size_t th = i / half;  // token * heads + head
    int t = static_cast<int>(th / heads);
    float angle = t * powf(theta, -2.0f * j / dim);
    float c, s;
    sincosf(angle, &s, &c);
    bf16* v = x + th * dim;
    float a = __bfloat162float(v[j]), b = __bfloat162float(v[j + half]);
    v[j] = __float2bfloat16(a * c - b * s);
    v[j + half] = __float2bfloat16(b * c + a * s);
  }
}

__global__ void bounded_bf16_kernel(uint16_t* bits, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    bits[i] = static_cast<uint16_t>((bits[i] & 0x807f) | 0x3f00);
  }
}

DeviceBuffer to_device_bf16(const std::vector<float>& v) {
  std::vector<bf16> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = __float2bfloat16(v[i]);
  DeviceBuffer d(std::max<size_t>(2, h.size() * 2));
  PROBE_CHECK(cudaMemcpy(d.as<bf16>(), h.data(), h.size() * 2, cudaMemcpyHostToDevice));
  return d;
}

std::vector<float> to_host_float(const DeviceBuffer& d, size_t n) {
  std::vector<bf16> h(n);
  PROBE_CHECK(cudaDeviceSynchronize());
  PROBE_CHECK_LAUNCH();
  PROBE_CHECK(cudaMemcpy(h.data(), d.as<bf16>(), n * 2, cudaMemcpyDeviceToHost));
  std::vector<float> f(n);
  for (size_t i = 0; i < n; ++i) f[i] = __bfloat162float(h[i]);
  return f;
}

void require_multiple_of_8(int value, const char* what) {
  if (value % 8 != 0) throw std::invalid_argument(std::string(what) + " must be a multiple of 8");
}

}  // namespace

std::vector<float> gpu_rmsnorm(const std::vector<float>& x, const std::vector<float>& weight,
                               int rows, int hidden, float eps) {
  require_multiple_of_8(hidden, "hidden");
  auto dx = to_device_bf16(x), dw = to_device_bf16(weight);
  DeviceBuffer out(x.size() * 2);
  rmsnorm_kernel<<<rows, 256>>>(dx.as<bf16>(), dw.as<bf16>(), out.as<bf16>(), hidden, eps);
  return to_host_float(out, x.size());
}

std::vector<float> gpu_add(const std::vector<float>& a, const std::vector<float>& b) {
  require_multiple_of_8(static_cast<int>(a.size() % 8), "size");
  auto da = to_device_bf16(a), db = to_device_bf16(b);
  DeviceBuffer out(a.size() * 2);
  add_kernel<<<256, 256>>>(da.as<uint4>(), db.as<uint4>(), out.as<uint4>(), a.size() / 8);
  return to_host_float(out, a.size());
}

std::vector<float> gpu_silu_mul(const std::vector<float>& gate_up, int rows, int inter) {
  require_multiple_of_8(inter, "intermediate");
  auto d = to_device_bf16(gate_up);
  DeviceBuffer out(size_t(rows) * inter * 2);
  silu_mul_kernel<<<256, 256>>>(d.as<bf16>(), out.as<bf16>(), inter, rows);
  return to_host_float(out, size_t(rows) * inter);
}

std::vector<float> gpu_softmax(const std::vector<float>& x, int rows, int cols) {
  auto d = to_device_bf16(x);
  DeviceBuffer out(x.size() * 2);
  softmax_kernel<<<rows, 256>>>(d.as<bf16>(), out.as<bf16>(), cols);
  return to_host_float(out, x.size());
}

std::vector<float> gpu_rope(const std::vector<float>& x, int tokens, int heads, int dim,
                            float theta) {
  auto d = to_device_bf16(x);
  rope_kernel<<<256, 256>>>(d.as<bf16>(), tokens, heads, dim, theta);
  return to_host_float(d, x.size());
}

nlohmann::json measure_small_kernels_in_graph(bool quick) {
  const int hidden = 4096, inter = 14336, rounds = 300;
  DeviceBuffer x(hidden * 2), r(hidden * 2), w(hidden * 2), o(hidden * 2), gu(2 * inter * 2),
      go(inter * 2);
  for (DeviceBuffer* buf : {&x, &r, &w, &gu}) {
    fill_random_bytes(*buf, static_cast<uint32_t>(buf->bytes()) + 17);
    bounded_bf16_kernel<<<64, 256>>>(buf->as<uint16_t>(), buf->bytes() / 2);
  }
  PROBE_CHECK(cudaDeviceSynchronize());
  cudaStream_t stream;
  PROBE_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  PROBE_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < rounds; ++i) {
    rmsnorm_kernel<<<1, 256, 0, stream>>>(x.as<bf16>(), w.as<bf16>(), o.as<bf16>(), hidden, 1e-5f);
    add_kernel<<<4, 128, 0, stream>>>(o.as<uint4>(), r.as<uint4>(), x.as<uint4>(), hidden / 8);
    silu_mul_kernel<<<14, 128, 0, stream>>>(gu.as<bf16>(), go.as<bf16>(), inter, 1);
  }
  PROBE_CHECK(cudaStreamEndCapture(stream, &graph));
  PROBE_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  auto t =
      time_runs([&] { PROBE_CHECK(cudaGraphLaunch(exec, nullptr)); }, {2, quick ? 5 : 15, nullptr});
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  PROBE_CHECK(cudaStreamDestroy(stream));
  const double kernels = 3.0 * rounds;
  return {{"median_us", t.median / kernels * 1e6},
          {"min_us", t.min / kernels * 1e6},
          {"max_us", t.max / kernels * 1e6},
          {"samples", t.samples},
          {"method",
           "graph of 900 one-token RMSNorm/add/SiLU x mul kernels, event time per "
           "kernel; each moves under 100 KB, so this is the fixed cost per kernel"}};
}

nlohmann::json sweep_llm_kernels(size_t l2_bytes, bool quick) {
  // Self-check on small inputs first: each kernel against a CPU reference.
  {
    const int rows = 3, hidden = 64;
    std::vector<float> x(rows * hidden), w(hidden);
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * i);
    for (int i = 0; i < hidden; ++i) w[i] = 0.5f + 0.01f * i;
    auto y = gpu_rmsnorm(x, w, rows, hidden, 1e-5f);
    for (int r = 0; r < rows; ++r) {
      double ss = 0;
      for (int i = 0; i < hidden; ++i) {
        float xr = __bfloat162float(__float2bfloat16(x[r * hidden + i]));
        ss += double(xr) * xr;
      }
      double scale = 1.0 / std::sqrt(ss / hidden + 1e-5);
      for (int i = 0; i < hidden; ++i) {
        double ref = __bfloat162float(__float2bfloat16(x[r * hidden + i])) * scale *
                     __bfloat162float(__float2bfloat16(w[i]));
        if (std::fabs(y[r * hidden + i] - ref) > 0.02 * std::fabs(ref) + 1e-3) {
          throw std::runtime_error("probe RMSNorm kernel disagrees with the CPU reference");
        }
      }
    }
  }
  L2Flusher flusher(l2_bytes);
  nlohmann::json rows = nlohmann::json::array();
  const std::vector<int> token_counts =
      quick ? std::vector<int>{1, 64, 1024, 16384}
            : std::vector<int>{1, 4, 16, 64, 256, 1024, 4096, 16384};
  const int hidden = 4096, inter = 14336, heads = 32, dim = 128, softmax_cols = 1024;
  TimingPlan plan{2, quick ? 5 : 15, &flusher};
  for (int t : token_counts) {
    size_t h_elems = size_t(t) * hidden;
    DeviceBuffer a(h_elems * 2), b(h_elems * 2), o(h_elems * 2), w(hidden * 2);
    DeviceBuffer gu(size_t(t) * 2 * inter * 2), go(size_t(t) * inter * 2);
    DeviceBuffer q(size_t(t) * heads * dim * 2);
    DeviceBuffer sm(size_t(t) * heads * softmax_cols * 2),
        smo(size_t(t) * heads * softmax_cols * 2);
    for (DeviceBuffer* buf : {&a, &b, &w, &gu, &q, &sm}) {
      fill_random_bytes(*buf, static_cast<uint32_t>(buf->bytes()));
      // Random words as bf16 can be huge or NaN: keep sign and mantissa, |v| in [0.5, 1).
      bounded_bf16_kernel<<<1024, 256>>>(buf->as<uint16_t>(), buf->bytes() / 2);
      PROBE_CHECK_LAUNCH();
    }
    struct Case {
      const char* name;
      double bytes;
      std::function<void()> launch;
      nlohmann::json shape;
    };
    const double bf = 2.0;
    std::vector<Case> cases = {
        {"rmsnorm",
         bf * (2.0 * h_elems + hidden),
         [&] {
           rmsnorm_kernel<<<t, 256>>>(a.as<bf16>(), w.as<bf16>(), o.as<bf16>(), hidden, 1e-5f);
         },
         {{"tokens", t}, {"hidden", hidden}}},
        {"add",
         bf * 3.0 * h_elems,
         [&] {
           add_kernel<<<1024, 256>>>(a.as<uint4>(), b.as<uint4>(), o.as<uint4>(), h_elems / 8);
         },
         {{"tokens", t}, {"hidden", hidden}}},
        {"silu_mul",
         bf * 3.0 * t * inter,
         [&] { silu_mul_kernel<<<1024, 256>>>(gu.as<bf16>(), go.as<bf16>(), inter, t); },
         {{"tokens", t}, {"intermediate", inter}}},
        {"softmax",
         bf * 2.0 * t * heads * softmax_cols,
         [&] { softmax_kernel<<<t * heads, 256>>>(sm.as<bf16>(), smo.as<bf16>(), softmax_cols); },
         {{"rows", t * heads}, {"cols", softmax_cols}}},
        {"rope",
         bf * 2.0 * t * heads * dim,
         [&] { rope_kernel<<<1024, 256>>>(q.as<bf16>(), t, heads, dim, 500000.0f); },
         {{"tokens", t}, {"heads", heads}, {"head_dim", dim}}},
    };
    for (auto& c : cases) {
      auto stats = time_runs(c.launch, plan);
      rows.push_back({{"kernel", c.name},
                      {"shape", c.shape},
                      {"bytes", c.bytes},
                      {"median_s", stats.median},
                      {"time", stats_to_json(stats)},
                      {"bytes_per_s", c.bytes / stats.median}});
    }
  }
  return rows;
}

}  // namespace inferlab::probe
