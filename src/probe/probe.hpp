#pragma once
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "probe/projection_shapes.hpp"

namespace inferlab {

struct ProbeOptions {
  bool quick = false;
  int device = 0;
  // GEMM sweep shapes; empty: the probe's own (probe::default_projections).
  std::vector<probe::ProjectionShape> projections;
};

// Measures the GPU and returns the hardware profile (format: docs/PROFILE.md). Progress lines go
// to `progress`. Throws InputError when there is no CUDA GPU or this build has no CUDA.
nlohmann::json run_probe(const ProbeOptions& options, std::ostream& progress);

// The host alone (seconds, not minutes): cudaLaunchKernel and cudaGraphLaunch costs and the CPU
// dispatch workload (probe/host_speed.hpp), as a host file: {"measured_at", "device", "source",
// "host": probe::host_section} (docs/PROFILE.md). Throws InputError as run_probe does.
nlohmann::json run_host_probe(const ProbeOptions& options, std::ostream& progress);

// True when this build contains the CUDA probe.
bool probe_available();
// CUDA GPUs this process can use (0 without a driver, a GPU, or a CUDA build).
int visible_gpu_count();

}  // namespace inferlab
