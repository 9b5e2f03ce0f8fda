#pragma once
#include <exception>

namespace inferlab::server {

// What the serving loop does when an iteration throws. Most failures belong to the iteration:
// its requests are answered with a 500 and the server goes on. A fatal one leaves the engine
// unusable, so the server stops (every request in flight gets a 500, new ones a 503, and
// `inferlab server` exits 1 for a supervisor to restart it). Fatal are:
//  * the CUDA errors the runtime documents as sticky (an illegal address, a launch failure, a
//    device-side assert, ...): the context is corrupt and every later call fails the same way.
//    The engine reports them as std::runtime_error "CUDA: <call>: <cudaGetErrorString>"
//    (engine/cuda/cuda_check.hpp), so they are told apart by that text;
//  * a tensor-parallel rank lost (engine::tp::PeerLost: a worker process that died, hung or
//    cannot be reached): the group cannot run another pass;
//  * kMaxConsecutiveFailedIterations failures in a row with no iteration succeeding between
//    them: an engine that fails whatever it runs, whatever the reason.
inline constexpr int kMaxConsecutiveFailedIterations = 3;

bool is_fatal_engine_error(const std::exception& error);

}  // namespace inferlab::server
