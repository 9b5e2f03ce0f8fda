#pragma once
#include <nlohmann/json.hpp>

namespace inferlab::probe {

struct DeviceInfo;

// Peak FMA throughput on the CUDA cores: fp64, fp32, fp16x2 and bf16x2 chains. Each entry has
// flops_per_s (median) and its stats. The result of every chain is written out and checked
// against a host replay of the same recurrence for one thread.
nlohmann::json measure_simt_peaks(int sm_count, bool quick);

// SM clock seen under load: a spin of a known cycle count timed by %globaltimer.
double measure_sm_clock_hz();

}  // namespace inferlab::probe
