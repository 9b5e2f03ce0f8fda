// The engine's collectives timed as a decode step runs them (engine/collective_curves.hpp).
#include "engine/collective_curves.hpp"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdlib>
#include <vector>

#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/rank_collectives.hpp"
#include "engine/cuda/rank_threads.hpp"

namespace inferlab::engine {

#ifdef INFERLAB_ENGINE_HAVE_NCCL
namespace {

using Clock = std::chrono::steady_clock;

// The one-shot kernel's measured range: up to 8 MB, past the engine's default 512 KB threshold,
// so that the curve shows where NCCL overtakes it.
constexpr int64_t kOneShotMaxBytes = int64_t{8} << 20;

struct Series {
  const char* collective;  // all_reduce or all_gather
  const char* library;     // nccl, one_shot or two_shot
  int64_t max_bytes;
};

// Back-to-back calls per sample: enough that a small message's time is not the barrier's.
int calls_per_sample(int64_t bytes) {
  return static_cast<int>(std::clamp<int64_t>((int64_t{16} << 20) / bytes, 1, 50));
}

double median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

nlohmann::json time_series(int ranks, const Series& series, bool graph, bool quick,
                           cuda::RankThreads& threads,
                           const std::vector<std::shared_ptr<cuda::RankCollectives>>& group) {
  const bool gather = std::string(series.collective) == "all_gather";
  const int samples = quick ? 5 : 15;
  std::vector<int64_t> sizes;
  // Every power of two: NCCL changes protocol between sizes a step of 4 would straddle (over two
  // H200s an all-reduce of 1.75-3.5 MB inside the engine's prefill took 33-38 us where the 1 and
  // 4 MB points, 14.8 and 35.9 us eager, interpolate to 20-32; MEASUREMENTS §34).
  for (int64_t bytes = 256; bytes <= series.max_bytes; bytes *= 2) sizes.push_back(bytes);
  std::vector<std::vector<double>> seconds(sizes.size());
  std::barrier meet(ranks);
  threads.run([&](int r) {
    const size_t max_bytes = static_cast<size_t>(series.max_bytes);
    cuda::DeviceBuffer<char> data(gather ? max_bytes * static_cast<size_t>(ranks + 1) : max_bytes);
    INFERLAB_CUDA_CHECK(cudaMemset(data.data(), 0, data.size()));
    cudaStream_t stream = nullptr;
    INFERLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cuda::RankCollectives& rank = *group[static_cast<size_t>(r)];
    for (size_t s = 0; s < sizes.size(); ++s) {
      const int64_t bytes = sizes[s];
      const int calls = calls_per_sample(bytes);
      auto issue = [&] {
        for (int c = 0; c < calls; ++c) {
          if (gather) {
            const auto* local = reinterpret_cast<const float*>(data.data());
            auto* out = reinterpret_cast<float*>(data.data() + max_bytes);
            rank.all_gather(local, out, bytes / 4, stream);
          } else {
            rank.all_reduce_sum(reinterpret_cast<__nv_bfloat16*>(data.data()), bytes / 2, stream);
          }
        }
      };
      cudaGraphExec_t exec = nullptr;
      if (graph) {
        cudaGraph_t captured = nullptr;
        INFERLAB_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        issue();
        INFERLAB_CUDA_CHECK(cudaStreamEndCapture(stream, &captured));
        INFERLAB_CUDA_CHECK(cudaGraphInstantiate(&exec, captured, 0));
        cudaGraphDestroy(captured);
      }
      for (int sample = -2; sample < samples; ++sample) {  // two warm-up rounds
        meet.arrive_and_wait();
        const auto start = Clock::now();
        if (graph) {
          INFERLAB_CUDA_CHECK(cudaGraphLaunch(exec, stream));
        } else {
          issue();
        }
        INFERLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
        meet.arrive_and_wait();
        if (r == 0 && sample >= 0) {
          seconds[s].push_back(std::chrono::duration<double>(Clock::now() - start).count() / calls);
        }
      }
      if (exec != nullptr) cudaGraphExecDestroy(exec);
    }
    cudaStreamDestroy(stream);
  });
  nlohmann::json rows = nlohmann::json::array();
  for (size_t s = 0; s < sizes.size(); ++s) {
    rows.push_back({{"collective", series.collective},
                    {"library", series.library},
                    {"mode", graph ? "graph" : "eager"},
                    {"devices", ranks},
                    {"bytes", sizes[s]},
                    {"calls_per_sample", calls_per_sample(sizes[s])},
                    {"samples", seconds[s].size()},
                    {"median_s", median(seconds[s])},
                    {"min_s", *std::min_element(seconds[s].begin(), seconds[s].end())},
                    {"max_s", *std::max_element(seconds[s].begin(), seconds[s].end())}});
  }
  return rows;
}

}  // namespace

nlohmann::json measure_engine_collectives(bool quick) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 2) return nullptr;
  std::vector<int> groups;
  for (int n = 2; n <= devices; n *= 2) groups.push_back(n);
  nlohmann::json rows = nlohmann::json::array();
  const int64_t nccl_max = quick ? (int64_t{16} << 20) : (int64_t{256} << 20);
  for (const int ranks : groups) {
    cuda::RankThreads threads(ranks);
    // Three groups over the same GPUs: one that never takes the peer kernels, one that takes the
    // one-shot kernel and one the two-shot kernel up to kOneShotMaxBytes (where every pair of GPUs
    // has peer access).
    const auto nccl = cuda::make_rank_collectives(ranks, 0);
    const auto one_shot = cuda::make_rank_collectives(ranks, kOneShotMaxBytes);
    const auto two_shot = cuda::make_rank_collectives(ranks, 0, kOneShotMaxBytes);
    std::vector<Series> series = {{"all_reduce", "nccl", nccl_max},
                                  {"all_gather", "nccl", std::min(nccl_max, int64_t{64} << 20)}};
    if (one_shot[0]->one_shot_for(256)) {
      series.push_back({"all_reduce", "one_shot", kOneShotMaxBytes});
      series.push_back({"all_reduce", "two_shot", kOneShotMaxBytes});
    }
    for (const Series& s : series) {
      const std::string library = s.library;
      const auto& group = library == "one_shot"   ? one_shot
                          : library == "two_shot" ? two_shot
                                                  : nccl;
      for (const bool graph : {false, true}) {
        for (auto& row : time_series(ranks, s, graph, quick, threads, group)) {
          rows.push_back(std::move(row));
        }
      }
    }
  }
  return {{"devices", devices},
          {"groups", groups},
          {"points", rows},
          {"method",
           "the engine's rank collectives (one host thread per GPU), per call within back-to-back "
           "calls: host wall time from a barrier of all ranks until every stream finished, over "
           "the calls; eager launches, or one CUDA graph of the calls replayed"}};
}
#else
nlohmann::json measure_engine_collectives(bool) {
  return nullptr;
}
#endif

}  // namespace inferlab::engine
