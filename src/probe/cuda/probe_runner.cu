// Runs every measurement in order and assembles the hardware profile.
#include <cuda_runtime.h>

#include <ctime>
#include <ostream>

#include "probe/cuda/collectives.cuh"
#include "probe/cuda/compute_simt.cuh"
#include "probe/cuda/cuda_util.cuh"
#include "probe/cuda/gemm_sweep.cuh"
#include "probe/cuda/launch.cuh"
#include "probe/cuda/llm_kernels.cuh"
#include "probe/cuda/memory.cuh"
#include "probe/host_speed.hpp"
#include "probe/probe.hpp"
#include "util/error.hpp"

#ifndef INFERLAB_VERSION
#define INFERLAB_VERSION "unknown"
#endif

namespace inferlab {

bool probe_available() {
  return true;
}

int visible_gpu_count() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

namespace {

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return buf;
}

// Checks that options.device is a visible GPU, selects it and returns the visible count.
int select_device(const ProbeOptions& options) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    throw InputError(std::string("no CUDA GPU is visible (") +
                     (err != cudaSuccess ? cudaGetErrorString(err) : "0 devices") +
                     "); run inferlab probe on a machine with an NVIDIA GPU");
  }
  if (options.device < 0 || options.device >= count) {
    throw InputError("--device " + std::to_string(options.device) + " is not one of the " +
                     std::to_string(count) + " visible GPUs");
  }
  PROBE_CHECK(cudaSetDevice(options.device));
  return count;
}

nlohmann::json measure_cpu_dispatch_json(bool quick) {
  return probe::cpu_dispatch_json(
      probe::measure_cpu_dispatch(quick ? 50000 : 200000, quick ? 5 : 11));
}

}  // namespace

nlohmann::json run_host_probe(const ProbeOptions& options, std::ostream& progress) {
  const int count = select_device(options);
  cudaDeviceProp prop{};
  PROBE_CHECK(cudaGetDeviceProperties(&prop, options.device));
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  progress << "[probe host 1/2] launch costs (cudaLaunchKernel, cudaGraphLaunch)" << std::endl;
  nlohmann::json launch = probe::measure_launch_overheads(options.quick);
  progress << "[probe host 2/2] CPU dispatch workload (one thread)" << std::endl;
  nlohmann::json host = probe::host_section(launch, measure_cpu_dispatch_json(options.quick));
  PROBE_CHECK(cudaDeviceSynchronize());
  return {{"measured_at", utc_now()},
          {"inferlab_version", INFERLAB_VERSION},
          {"quick", options.quick},
          {"source", std::string("inferlab probe --host-only") + (options.quick ? " --quick" : "")},
          {"device",
           {{"name", prop.name},
            {"driver", std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10)},
            {"cuda", std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10)},
            {"visible_devices", count}}},
          {"host", host}};
}

nlohmann::json run_probe(const ProbeOptions& options, std::ostream& progress) {
  const int count = select_device(options);
  cudaDeviceProp prop{};
  PROBE_CHECK(cudaGetDeviceProperties(&prop, options.device));
  int clock_khz = 0, mem_clock_khz = 0, driver = 0, runtime = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, options.device);
  cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, options.device);
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  const int sms = prop.multiProcessorCount;
  const size_t l2 = static_cast<size_t>(prop.l2CacheSize);
  const int steps = 8;
  int step = 0;
  auto say = [&](const std::string& what) {
    progress << "[probe " << ++step << "/" << steps << "] " << what << std::endl;
  };

  nlohmann::json profile;
  profile["measured_at"] = utc_now();
  profile["inferlab_version"] = INFERLAB_VERSION;
  profile["quick"] = options.quick;
  profile["device"] = {
      {"name", prop.name},
      {"sm_count", sms},
      {"l2_bytes", l2},
      {"memory_bytes", prop.totalGlobalMem},
      {"compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor)},
      {"shared_memory_per_sm_bytes", prop.sharedMemPerMultiprocessor},
      {"clocks", {{"sm_max_hz", clock_khz * 1e3}, {"memory_hz", mem_clock_khz * 1e3}}},
      {"driver", std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10)},
      {"cuda", std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10)},
      {"visible_devices", count}};

  say("CUDA-core FMA peaks (fp64, fp32, fp16x2, bf16x2)");
  nlohmann::json compute = probe::measure_simt_peaks(sms, options.quick);
  say("tensor-core GEMM peaks through cuBLASLt (tf32, fp16, bf16, fp8, int8)");
  compute.update(probe::measure_tensor_peaks(options.quick));
  profile["compute"] = compute;
  profile["device"]["clocks"]["sm_measured_after_gemm_hz"] = probe::measure_sm_clock_hz();

  probe::MemoryPlan plan{sms, l2, std::min<size_t>(size_t(2) << 30, prop.totalGlobalMem / 8),
                         options.quick};
  say("memory levels: HBM, L2 and shared-memory bandwidth, latency, read:write mixes, patterns");
  profile["memory"] = probe::measure_memory_levels(plan);
  say("working-set sweep (bandwidth and latency staircase)");
  profile["memory"]["working_set_sweep"] = probe::measure_working_set_sweep(plan);

  say("launch and synchronization overheads, the host's CPU dispatch workload");
  nlohmann::json launch = probe::measure_launch_overheads(options.quick);
  profile["launch"] = launch;
  profile["host"] = probe::host_section(launch, measure_cpu_dispatch_json(options.quick));
  profile["launch_overhead_us"] = launch["launch"]["median_us"];
  profile["kernel_gap_us"] = launch["kernel_gap"]["median_us"];
  profile["graph_launch_overhead_us"] = launch["graph_launch"]["median_us"];
  profile["graph_kernel_gap_us"] = launch["graph_kernel_gap"]["median_us"];

  say("bf16 GEMM sweep over the shipped models' projections, N and K staircases");
  profile["sweeps"]["gemm"] = probe::sweep_gemms(
      options.projections.empty() ? probe::default_projections(options.quick) : options.projections,
      l2, sms, options.quick);
  say("memory-bound LLM kernels over token counts, and small kernels in a CUDA graph");
  profile["sweeps"]["llm_kernels"] = probe::sweep_llm_kernels(l2, options.quick);
  profile["launch"]["graph_small_kernel"] = probe::measure_small_kernels_in_graph(options.quick);
  profile["graph_small_kernel_us"] = profile["launch"]["graph_small_kernel"]["median_us"];
  say(count > 1 ? "NCCL all-reduce and all-gather" : "collectives skipped: one GPU visible");
  nlohmann::json collectives = probe::measure_collectives(options.quick);
  profile["interconnect"] = collectives.is_null() ? nlohmann::json::object() : collectives;
  PROBE_CHECK(cudaDeviceSynchronize());
  return profile;
}

}  // namespace inferlab
