#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace inferlab {

enum class Collective { all_reduce, all_gather };

// One NCCL collective over one number of devices as `inferlab probe` measured it: the median
// time of a group call against the bytes each device contributes (the probe's "bytes": the
// all-reduce buffer, or one device's part of an all-gather), sizes ascending.
//
// The probe times a group call from the host until every stream has finished, so the smallest
// messages' time is mostly host launch and synchronization, which a collective inside a CUDA
// graph does not pay. transfer_s() therefore gives only what the curve adds above its smallest
// message: the measured cost of moving the bytes (NCCL's protocol and link efficiency included),
// to which the caller adds a per-hop latency.
struct CollectiveCurve {
  Collective kind = Collective::all_reduce;
  int devices = 0;
  std::vector<std::pair<double, double>> points;  // (bytes per device, median seconds)
  // Back-to-back calls each point's samples held (the in-stream curves' "calls_per_sample"),
  // by point; 0 where the profile does not say.
  std::vector<int> calls_per_sample;

  // Piecewise linear in bytes between measured sizes, minus the smallest size's time; 0 below
  // the smallest size, the last segment's slope past the largest.
  double transfer_s(double bytes) const;
  // The whole time of one call: piecewise linear between measured sizes, the smallest size's
  // time below it, the last segment's slope past the largest. For the in-stream curves, where
  // a call's time holds no host launch or synchronization.
  double call_s(double bytes) const;
};

// Which measurement a curve comes from: the probe's NCCL group call from the host ("interconnect"
// section), or the engine's collectives timed per call within back-to-back calls ("collectives"
// section, engine/collective_curves.hpp), by library and by launch mode.
enum class CollectiveLibrary { nccl, one_shot };
enum class CollectiveLaunch { host_group, eager, graph };

struct CollectiveCurves {
  std::vector<CollectiveCurve> curves;
  // The curve of `kind` over exactly `devices` devices, or null where none was measured.
  const CollectiveCurve* find(Collective kind, int devices) const;
  bool empty() const { return curves.empty(); }
};

// One call launched eagerly into a stream the host keeps ahead of (a prefill, which the GPU
// bounds): the in-graph call plus what eager launch adds to each call, the eager curve less the
// graph curve at the sizes whose samples held several back-to-back calls, interpolated between
// them and held past the first and last. A sample of a single call (the large sizes) also holds
// that sample's own launch latency and synchronisation, which a queued stream hides, so those
// sizes add nothing of their own. The graph curve alone where `eager` is null.
double eager_call_s(const CollectiveCurve& graph, const CollectiveCurve* eager, double bytes);

// The in-stream curves of a profile's "collectives" section, one set per (library, launch).
struct InStreamCollectives {
  CollectiveCurves nccl_graph, nccl_eager, one_shot_graph, one_shot_eager;
  CollectiveCurves two_shot_graph, two_shot_eager;  // measured, not yet priced (off by default)
  bool empty() const { return nccl_graph.empty() && nccl_eager.empty(); }
};

// The profile's "interconnect" section ({} where the probe saw one GPU): rows of {collective,
// bytes, devices, median_s}. Unknown collectives, non-positive sizes or times, fewer than two
// sizes for a curve, or a size measured twice are InputErrors naming `context`. Each time is
// raised to the largest at any smaller size, so the curve never falls.
CollectiveCurves parse_collective_curves(const nlohmann::json& interconnect,
                                         const std::string& context);

// The profile's "collectives" section (rows as above plus "library": nccl, one_shot or two_shot and
// "mode": eager or graph), split by library and mode; the same checks.
InStreamCollectives parse_in_stream_collectives(const nlohmann::json& collectives,
                                                const std::string& context);

}  // namespace inferlab
