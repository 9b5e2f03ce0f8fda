#include <cstdlib>
#include <vector>

#include "probe/cuda/collectives.cuh"
#include "probe/cuda/cuda_util.cuh"

#ifdef INFERLAB_HAVE_NCCL
#include <nccl.h>
#endif

namespace inferlab::probe {

#ifdef INFERLAB_HAVE_NCCL
namespace {
#define NCCL_CHECK(call)                                                                 \
  do {                                                                                   \
    ncclResult_t nccl_r_ = (call);                                                       \
    if (nccl_r_ != ncclSuccess) {                                                        \
      throw std::runtime_error(std::string(#call) + ": " + ncclGetErrorString(nccl_r_)); \
    }                                                                                    \
  } while (0)

// The rows of one group: devices 0..devices-1, one communicator per device.
nlohmann::json measure_group(int devices, bool quick) {
  std::vector<ncclComm_t> comms(devices);
  std::vector<int> ids(devices);
  for (int d = 0; d < devices; ++d) ids[d] = d;
  NCCL_CHECK(ncclCommInitAll(comms.data(), devices, ids.data()));
  const size_t max_bytes = quick ? (size_t(64) << 20) : (size_t(1) << 30);
  std::vector<DeviceBuffer> send, recv;
  std::vector<cudaStream_t> streams(devices);
  for (int d = 0; d < devices; ++d) {
    PROBE_CHECK(cudaSetDevice(d));
    send.emplace_back(max_bytes);
    recv.emplace_back(max_bytes * devices);
    fill_random_bytes(send.back(), 100 + d);
    PROBE_CHECK(cudaStreamCreate(&streams[d]));
  }
  nlohmann::json rows = nlohmann::json::array();
  for (int op = 0; op < 2; ++op) {
    for (size_t bytes = 4096; bytes <= max_bytes; bytes *= (quick ? 16 : 4)) {
      size_t count = bytes / 4;  // fp32 elements per device
      auto launch = [&] {
        NCCL_CHECK(ncclGroupStart());
        for (int d = 0; d < devices; ++d) {
          if (op == 0) {
            NCCL_CHECK(ncclAllReduce(send[d].as<float>(), recv[d].as<float>(), count, ncclFloat,
                                     ncclSum, comms[d], streams[d]));
          } else {
            NCCL_CHECK(ncclAllGather(send[d].as<float>(), recv[d].as<float>(), count, ncclFloat,
                                     comms[d], streams[d]));
          }
        }
        NCCL_CHECK(ncclGroupEnd());
        for (int d = 0; d < devices; ++d) {
          PROBE_CHECK(cudaSetDevice(d));
          PROBE_CHECK(cudaStreamSynchronize(streams[d]));
        }
      };
      for (int w = 0; w < 3; ++w) launch();
      std::vector<double> samples;
      for (int r = 0; r < (quick ? 5 : 20); ++r) {
        double t0 = host_seconds();
        launch();
        samples.push_back(host_seconds() - t0);
      }
      SampleStats s = summarize(samples);
      double n = devices;
      // nccl-tests: all-reduce busbw = algbw x 2(n-1)/n; all-gather busbw = algbw x (n-1)/n,
      // with algbw over the per-device buffer (all-gather: the gathered size).
      double algbw = (op == 0 ? bytes : bytes * n) / s.median;
      double busbw = algbw * (op == 0 ? 2.0 * (n - 1) / n : (n - 1) / n);
      rows.push_back({{"collective", op == 0 ? "all_reduce" : "all_gather"},
                      {"bytes", bytes},
                      {"devices", devices},
                      {"median_s", s.median},
                      {"time", stats_to_json(s)},
                      {"algbw_bps", algbw},
                      {"busbw_bps", busbw}});
    }
  }
  for (int d = 0; d < devices; ++d) {
    ncclCommDestroy(comms[d]);
    cudaStreamDestroy(streams[d]);
  }
  PROBE_CHECK(cudaSetDevice(0));
  return rows;
}

}  // namespace

nlohmann::json measure_collectives(bool quick) {
  int devices = 0;
  PROBE_CHECK(cudaGetDeviceCount(&devices));
  if (devices < 2) return nullptr;
  setenv("NCCL_NVLS_ENABLE", "0", 1);  // multicast can take a shared host's GPUs down
  // Tensor-parallel degrees are powers of two: groups of 2, 4, ... GPUs, and all of them, so
  // that a prediction for TP n on a larger machine finds its curve.
  std::vector<int> groups;
  for (int n = 2; n <= devices; n *= 2) groups.push_back(n);
  if (groups.back() != devices) groups.push_back(devices);
  nlohmann::json rows = nlohmann::json::array();
  for (int n : groups) {
    for (auto& row : measure_group(n, quick)) rows.push_back(std::move(row));
  }
  return {{"devices", devices},
          {"groups", groups},
          {"library", "nccl"},
          {"points", rows},
          {"method",
           "host wall time of a group call on the group's devices until all streams "
           "finish (outside a CUDA graph)"}};
}
#else
nlohmann::json measure_collectives(bool) {
  return nullptr;
}
#endif

}  // namespace inferlab::probe
