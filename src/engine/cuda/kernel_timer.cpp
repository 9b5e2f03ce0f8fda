#include "engine/cuda/kernel_timer.hpp"

#include <map>

#include "engine/cuda/cuda_check.hpp"

namespace inferlab::engine::cuda {

KernelTimer::~KernelTimer() {
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
}

cudaEvent_t KernelTimer::event(size_t index) {
  while (events_.size() <= index) {
    cudaEvent_t e = nullptr;
    check_cuda(cudaEventCreate(&e), "cudaEventCreate");
    events_.push_back(e);
  }
  return events_[index];
}

void KernelTimer::begin(cudaStream_t stream) {
  stream_ = stream;
  marks_.clear();
  used_ = 1;
  check_cuda(cudaEventRecord(event(0), stream), "cudaEventRecord");
}

void KernelTimer::mark(const char* name, double bytes, double flops) {
  if (!enabled_ || stream_ == nullptr) return;
  check_cuda(cudaEventRecord(event(used_), stream_), "cudaEventRecord");
  ++used_;
  marks_.push_back({name, bytes, flops});
}

void KernelTimer::end(cudaStream_t stream) {
  check_cuda(cudaEventRecord(event(used_), stream), "cudaEventRecord");
  ++used_;
  stream_ = nullptr;
}

double KernelTimer::total_s() const {
  if (used_ < 2) return -1;
  float ms = 0;
  check_cuda(cudaEventElapsedTime(&ms, events_[0], events_[used_ - 1]), "cudaEventElapsedTime");
  return ms * 1e-3;
}

std::vector<KernelClassTime> KernelTimer::classes() const {
  std::vector<KernelClassTime> out;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < marks_.size(); ++i) {
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, events_[i], events_[i + 1]), "cudaEventElapsedTime");
    auto [it, added] = index.emplace(marks_[i].name, out.size());
    if (added) out.push_back({marks_[i].name, 0, 0, 0, 0});
    KernelClassTime& k = out[it->second];
    k.seconds += ms * 1e-3;
    k.bytes += marks_[i].bytes;
    k.flops += marks_[i].flops;
    k.launches += 1;
  }
  return out;
}

}  // namespace inferlab::engine::cuda
