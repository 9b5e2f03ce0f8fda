#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace inferlab::probe {

// A Python-free CPU figure that stands for the host's per-op dispatch speed: one thread runs a
// fixed sequence of "ops", each doing what a framework's dispatcher does per operator call
// below the Python binding: hash a short operator name and find it in a hash map of 512
// entries, compute a dispatch key from a bit set, call the kernel through a virtual function
// picked by the data (an indirect call no compiler can resolve), allocate a tensor-like object of
// ~200 bytes with a sizes/strides vector of 4 dims, bump and drop two atomic reference counts,
// find a block in an ordered pool of 1024 sizes (a caching allocator's lower_bound), and free.
// That is latency-bound, branchy, pointer-chasing integer code on one core: its speed follows
// the core's clock, its branch predictor, caches and memory latency, and malloc, as PyTorch's
// per-op C++ path (c10 dispatcher, TensorImpl and intrusive_ptr, CUDACachingAllocator) does;
// not the core count nor the FLOP rate. It cannot stand for CPython's interpreter: see
// validation/host_dispatch.py for the PyTorch figure the host rule prefers.
struct CpuDispatchResult {
  double ns_per_op_median = 0.0, ns_per_op_min = 0.0, ns_per_op_max = 0.0;
  int64_t ops_per_run = 0;
  int runs = 0;
  uint64_t checksum = 0;  // folds every op's result: the work cannot be optimised away
};
// `ops_per_run` ops per timed run, `runs` runs after one warm-up run; median of the runs.
CpuDispatchResult measure_cpu_dispatch(int64_t ops_per_run, int runs);

// {"ns_per_op": median, "min_ns", "max_ns", "ops_per_run", "runs", "checksum", "method"}.
nlohmann::json cpu_dispatch_json(const CpuDispatchResult& result);

// The CPU's model name (/proc/cpuinfo) and logical CPU count, for the record.
nlohmann::json cpu_description();

// The host section of a profile or host file (format: docs/PROFILE.md): launch_us and
// graph_launch_us from the probe's launch figures (measure_launch_overheads' "launch" and
// "graph_launch" entries, each with "median_us"), cpu_dispatch_ns, torch_op_us null (filled in
// by validation/host_dispatch.py --merge), and the detailed entries.
nlohmann::json host_section(const nlohmann::json& launch, const nlohmann::json& cpu_dispatch);

}  // namespace inferlab::probe
