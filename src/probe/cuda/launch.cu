#include <vector>

#include "probe/cuda/cuda_util.cuh"
#include "probe/cuda/launch.cuh"

namespace inferlab::probe {

namespace {
__global__ void empty_kernel(int* flag) {
  if (flag != nullptr && threadIdx.x == 1024) *flag = 1;  // never true: the kernel does nothing
}

nlohmann::json us_entry(const SampleStats& s, double per_run, const char* method) {
  SampleStats us = s;
  for (double* v : {&us.median, &us.min, &us.max, &us.mean, &us.stdev}) *v *= 1e6 / per_run;
  return {{"median_us", us.median}, {"min_us", us.min},      {"max_us", us.max},
          {"stdev_us", us.stdev},   {"samples", us.samples}, {"method", method}};
}
}  // namespace

nlohmann::json measure_launch_overheads(bool quick) {
  const int kernels = quick ? 2000 : 10000;
  const int repeats = quick ? 5 : 11;
  nlohmann::json out;

  // Host cost per launch: wall time of enqueuing `kernels` launches (the GPU runs behind).
  std::vector<double> host;
  for (int r = 0; r < repeats; ++r) {
    PROBE_CHECK(cudaDeviceSynchronize());
    double t0 = host_seconds();
    for (int i = 0; i < kernels; ++i) empty_kernel<<<1, 32>>>(nullptr);
    double t1 = host_seconds();
    PROBE_CHECK(cudaDeviceSynchronize());
    host.push_back(t1 - t0);
  }
  PROBE_CHECK_LAUNCH();
  out["launch"] =
      us_entry(summarize(host), kernels, "host wall time per cudaLaunchKernel of an empty kernel");

  // GPU time per back-to-back empty kernel in a stream.
  auto stream_gap = time_runs(
      [&] {
        for (int i = 0; i < kernels; ++i) empty_kernel<<<1, 32>>>(nullptr);
      },
      {1, repeats, nullptr});
  out["kernel_gap"] =
      us_entry(stream_gap, kernels, "event time per back-to-back empty kernel, stream");

  // The same kernels captured in one graph and replayed.
  cudaStream_t stream;
  PROBE_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  PROBE_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < 1000; ++i) empty_kernel<<<1, 32, 0, stream>>>(nullptr);
  PROBE_CHECK(cudaStreamEndCapture(stream, &graph));
  PROBE_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  auto graph_gap =
      time_runs([&] { PROBE_CHECK(cudaGraphLaunch(exec, nullptr)); }, {2, repeats, nullptr});
  out["graph_kernel_gap"] =
      us_entry(graph_gap, 1000, "event time per empty kernel inside a replayed 1000-kernel graph");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);

  // Host cost of launching a one-kernel graph.
  PROBE_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  empty_kernel<<<1, 32, 0, stream>>>(nullptr);
  PROBE_CHECK(cudaStreamEndCapture(stream, &graph));
  PROBE_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  std::vector<double> graph_host;
  for (int r = 0; r < repeats; ++r) {
    PROBE_CHECK(cudaDeviceSynchronize());
    double t0 = host_seconds();
    for (int i = 0; i < kernels / 10; ++i) PROBE_CHECK(cudaGraphLaunch(exec, stream));
    double t1 = host_seconds();
    PROBE_CHECK(cudaStreamSynchronize(stream));
    graph_host.push_back(t1 - t0);
  }
  out["graph_launch"] = us_entry(summarize(graph_host), kernels / 10,
                                 "host wall time per cudaGraphLaunch of a one-kernel graph");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  PROBE_CHECK(cudaStreamDestroy(stream));

  // Round trip: launch an empty kernel and wait for it.
  std::vector<double> sync;
  for (int r = 0; r < (quick ? 200 : 1000); ++r) {
    double t0 = host_seconds();
    empty_kernel<<<1, 32>>>(nullptr);
    PROBE_CHECK(cudaDeviceSynchronize());
    sync.push_back(host_seconds() - t0);
  }
  out["launch_and_sync"] =
      us_entry(summarize(sync), 1, "host wall time of launch + cudaDeviceSynchronize");
  return out;
}

}  // namespace inferlab::probe
