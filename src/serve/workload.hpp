#pragma once
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <random>
#include <string>
#include <vector>

#include "serve/request.hpp"

namespace inferlab {

// Token counts of a request are kept in [1, kMaxWorkloadTokens].
inline constexpr int64_t kMaxWorkloadTokens = int64_t{1} << 20;

// Token-count distributions: "fixed:N", "uniform:LO,HI", "normal:MEAN,SD",
// "lognormal:MEAN,SIGMA" (SIGMA of the underlying normal; the mean is MEAN), or
// "empirical:V1,V2,..." / "empirical:@FILE" (one count per line, drawn uniformly). Draws are
// rounded and kept in [1, 2^20].
struct LengthDistribution {
  enum class Kind { fixed, uniform, normal, lognormal, empirical };
  Kind kind = Kind::fixed;
  double a = 1.0, b = 0.0;
  std::vector<int64_t> values;
  std::string text;
  int64_t sample(std::mt19937_64& rng) const;
  double mean() const;
};

// Arrivals at `rate` requests per second: "poisson", "gamma:CV" (gamma-distributed gaps with
// that coefficient of variation: above 1 is burstier than Poisson), or
// "bursty:PERIOD_S,DUTY" (Poisson at rate / DUTY during the first DUTY share of every period,
// nothing in the rest: the same mean rate in bursts).
struct ArrivalProcess {
  enum class Kind { poisson, gamma, bursty };
  Kind kind = Kind::poisson;
  double cv = 1.0, period_s = 10.0, duty = 0.25;
  std::string text;
};

// A shared system prompt: "tokens=N,groups=G[,share=F]": a fraction F of requests (default
// all) start with one of G prefixes of N tokens, added in front of their own prompt.
struct SharedPrefixSpec {
  int64_t tokens = 0, groups = 1;
  double share = 1.0;
};

struct WorkloadSpec {
  int64_t requests = 1000;
  double rate_per_s = 1.0;  // 0: every request arrives at time 0 (offline)
  ArrivalProcess arrival;
  LengthDistribution input, output;
  SharedPrefixSpec prefix;
  uint64_t seed = 1;
};
// Deterministic for a given spec (seed included).
std::vector<ServeRequest> generate_workload(const WorkloadSpec& spec);

// A trace: JSON lines ({"arrival_s", "prompt_tokens", "output_tokens"[, "prefix_id",
// "prefix_tokens"]}) or CSV with a header naming those columns. InputError with the line
// number for anything malformed.
// A line longer than kMaxTraceLineBytes is refused before it is read whole.
std::vector<ServeRequest> load_trace(const std::string& path);
inline constexpr size_t kMaxTraceLineBytes = size_t{64} << 10;
enum class TraceFormat { jsonl, csv };
// The same from a stream; `path` names it in errors (load_trace picks CSV by the .csv suffix).
std::vector<ServeRequest> parse_trace(std::istream& in, TraceFormat format,
                                      const std::string& path);

// The token ids of request `index`'s prompt where a workload gives lengths but no text (`serve
// --executor engine`, the stress tests): uniform draws from [0, vocab) seeded by (seed, index),
// and the request's shared prefix (prefix_id, prefix_tokens) drawn once per prefix, so that the
// requests sharing it share its ids and prefix caching finds them. Even random streams serve
// requests, odd ones prefixes.
std::vector<int32_t> synthetic_prompt(const ServeRequest& request, size_t index, uint64_t seed,
                                      int64_t vocab);

}  // namespace inferlab
