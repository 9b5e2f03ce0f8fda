#pragma once
// What the kernels' launchers ask of the current GPU: its multiprocessors and compute capability,
// asked once per device and cached (no synchronisation, so also safe while a graph is being
// captured). Internal to the CUDA backend.
namespace inferlab::engine::cuda {

struct DeviceFacts {
  int sm_count = 0;
  int major = 0, minor = 0;
  int compute_capability() const { return 10 * major + minor; }  // 90 for an H100 or H200
};

DeviceFacts current_device_facts();

}  // namespace inferlab::engine::cuda
