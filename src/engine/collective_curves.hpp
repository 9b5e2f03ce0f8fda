#pragma once
#include <nlohmann/json.hpp>

namespace inferlab::engine {

// The tensor-parallel group's collectives as the engine runs them (engine/cuda/rank_collectives:
// one host thread per GPU, NCCL and the one-shot NVLink all-reduce), timed over every group of
// 2, 4, ... GPUs of this machine: all-reduce (bf16) and all-gather (fp32) from 256 B to 256 MB
// per GPU, each launched eagerly and replayed from a CUDA graph. Each time is per call within a
// run of back-to-back calls (what a decode step's 2 per layer see), host wall time from a
// barrier of all ranks until every stream has finished, divided by the calls. Rows as the
// profile's "interconnect" points, with "library" (nccl, one_shot) and "mode" (eager, graph).
// Null with fewer than two GPUs or without NCCL.
nlohmann::json measure_engine_collectives(bool quick);

}  // namespace inferlab::engine
