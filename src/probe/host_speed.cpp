#include "probe/host_speed.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

namespace inferlab::probe {

namespace {

// A tensor's header as a framework keeps it (c10::TensorImpl-like, ~200 bytes): reference
// counts, sizes and strides inline, dtype, device, offset.
struct TensorHeader {
  std::atomic<int32_t> refcount{1};
  std::atomic<int32_t> weakcount{1};
  std::array<int64_t, 4> sizes{};
  std::array<int64_t, 4> strides{};
  int64_t storage_offset = 0;
  int64_t numel = 0;
  uint32_t dtype = 0, device = 0;
  std::array<uint64_t, 8> extra{};  // autograd meta, key set, python object slot
};

// A storage header (c10::StorageImpl-like): the second allocation of every new tensor.
struct StorageHeader {
  std::atomic<int32_t> refcount{1};
  uint64_t nbytes = 0;
  uint64_t block = 0;
  std::array<uint64_t, 6> allocator{};
};

// The kernels a dispatcher calls through a function table.
struct Kernel {
  virtual ~Kernel() = default;
  virtual uint64_t call(const TensorHeader& t, uint64_t key) const = 0;
};
struct AddKernel final : Kernel {
  uint64_t call(const TensorHeader& t, uint64_t key) const override {
    return static_cast<uint64_t>(t.numel) + key;
  }
};
struct MulKernel final : Kernel {
  uint64_t call(const TensorHeader& t, uint64_t key) const override {
    return static_cast<uint64_t>(t.sizes[0] * t.strides[0]) ^ (key << 3);
  }
};
struct ViewKernel final : Kernel {
  uint64_t call(const TensorHeader& t, uint64_t key) const override {
    uint64_t h = key;
    for (int d = 0; d < 4; ++d) h = h * 31 + static_cast<uint64_t>(t.sizes[d]);
    return h;
  }
};
struct CopyKernel final : Kernel {
  uint64_t call(const TensorHeader& t, uint64_t key) const override {
    return static_cast<uint64_t>(t.storage_offset) + t.dtype + (key ^ t.device);
  }
};

struct OpEntry {
  std::array<const Kernel*, 4> kernels{};
  uint64_t schema = 0;
};

uint64_t xorshift(uint64_t& s) {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

class DispatchWorkload {
 public:
  DispatchWorkload() {
    kernels_[0] = std::make_unique<AddKernel>();
    kernels_[1] = std::make_unique<MulKernel>();
    kernels_[2] = std::make_unique<ViewKernel>();
    kernels_[3] = std::make_unique<CopyKernel>();
    uint64_t s = 0x9e3779b97f4a7c15ull;
    names_.reserve(kOps);
    for (int i = 0; i < kOps; ++i) {
      names_.push_back("aten::op_" + std::to_string(i) + (i % 3 ? ".Tensor" : ".out"));
    }
    registry_.reserve(kOps);
    for (int i = 0; i < kOps; ++i) {
      OpEntry e;
      for (int k = 0; k < 4; ++k) e.kernels[k] = kernels_[(i + k) % 4].get();
      e.schema = xorshift(s);
      registry_.emplace(names_[i], e);
    }
    for (int i = 0; i < kPoolBlocks; ++i) pool_.insert(512 * (1 + xorshift(s) % 40000));
  }

  // One run of `ops` dispatches from a fixed seed: the same work, the same checksum, always.
  uint64_t run(int64_t ops) const {
    uint64_t s = 0x2545f4914f6cdd1dull, sum = 0;
    for (int64_t i = 0; i < ops; ++i) {
      const uint64_t r = xorshift(s);
      const std::string& name = names_[r % kOps];
      const OpEntry& op = registry_.find(name)->second;  // hashes the name, as a lookup by name
      const uint64_t key_set = (r >> 10) & 0xffu;
      int key = 0;
      for (uint64_t k = key_set; k > 1; k >>= 1) ++key;  // highest dispatch key in the set
      auto* t = new TensorHeader;
      auto* storage = new StorageHeader;
      int64_t numel = 1;
      for (int d = 3; d >= 0; --d) {
        t->sizes[d] = 1 + static_cast<int64_t>((r >> (20 + 4 * d)) & 15u);
        t->strides[d] = numel;
        numel *= t->sizes[d];
      }
      t->numel = numel;
      t->dtype = static_cast<uint32_t>(op.schema & 7u);
      storage->nbytes = static_cast<uint64_t>(numel) * 2;
      auto block = pool_.lower_bound(storage->nbytes * 97);  // the caching allocator's pool
      storage->block = block == pool_.end() ? 0 : *block;
      t->refcount.fetch_add(1, std::memory_order_relaxed);  // the result handed to the caller
      sum += op.kernels[key & 3]->call(*t, static_cast<uint64_t>(key)) + storage->block;
      t->refcount.fetch_sub(1, std::memory_order_acq_rel);
      if (t->refcount.fetch_sub(1, std::memory_order_acq_rel) == 1) delete t;
      if (storage->refcount.fetch_sub(1, std::memory_order_acq_rel) == 1) delete storage;
    }
    return sum;
  }

 private:
  static constexpr int kOps = 512;
  static constexpr int kPoolBlocks = 1024;
  std::array<std::unique_ptr<Kernel>, 4> kernels_;
  std::vector<std::string> names_;
  std::unordered_map<std::string_view, OpEntry> registry_;
  std::set<uint64_t> pool_;
};

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

CpuDispatchResult measure_cpu_dispatch(int64_t ops_per_run, int runs) {
  if (ops_per_run < 1 || runs < 1) {
    throw std::invalid_argument("measure_cpu_dispatch needs at least one op and one run");
  }
  const DispatchWorkload workload;
  CpuDispatchResult r;
  r.ops_per_run = ops_per_run;
  r.runs = runs;
  r.checksum = workload.run(ops_per_run);  // warm-up: caches, branch predictors, malloc arenas
  std::vector<double> ns;
  for (int i = 0; i < runs; ++i) {
    const double t0 = seconds_now();
    const uint64_t sum = workload.run(ops_per_run);
    ns.push_back((seconds_now() - t0) * 1e9 / static_cast<double>(ops_per_run));
    if (sum != r.checksum) throw std::logic_error("CPU dispatch workload is not deterministic");
  }
  std::sort(ns.begin(), ns.end());
  r.ns_per_op_min = ns.front();
  r.ns_per_op_max = ns.back();
  r.ns_per_op_median =
      ns.size() % 2 ? ns[ns.size() / 2] : 0.5 * (ns[ns.size() / 2 - 1] + ns[ns.size() / 2]);
  return r;
}

nlohmann::json cpu_dispatch_json(const CpuDispatchResult& r) {
  return {{"ns_per_op", r.ns_per_op_median},
          {"min_ns", r.ns_per_op_min},
          {"max_ns", r.ns_per_op_max},
          {"ops_per_run", r.ops_per_run},
          {"runs", r.runs},
          {"checksum", r.checksum},
          {"method",
           "one thread, a fixed sequence of dispatcher-like ops (name lookup in a hash map, "
           "dispatch key, virtual kernel call, two small allocations, atomic reference counts, "
           "ordered-pool lookup, free); median ns per op over the runs"}};
}

nlohmann::json cpu_description() {
  std::string model;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; model.empty() && std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) model = line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return {{"model", model.empty() ? nlohmann::json() : nlohmann::json(model)},
          {"logical_cpus", std::thread::hardware_concurrency()}};
}

nlohmann::json host_section(const nlohmann::json& launch, const nlohmann::json& cpu_dispatch) {
  auto median = [&](const char* key) -> nlohmann::json {
    if (launch.contains(key) && launch.at(key).contains("median_us")) {
      return launch.at(key).at("median_us");
    }
    return nullptr;
  };
  return {{"launch_us", median("launch")},
          {"graph_launch_us", median("graph_launch")},
          {"cpu_dispatch_ns", cpu_dispatch.value("ns_per_op", nlohmann::json())},
          {"torch_op_us", nullptr},
          {"launch", launch.value("launch", nlohmann::json())},
          {"graph_launch", launch.value("graph_launch", nlohmann::json())},
          {"cpu_dispatch", cpu_dispatch},
          {"cpu", cpu_description()}};
}

}  // namespace inferlab::probe
