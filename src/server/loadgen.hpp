#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "serve/request.hpp"
#include "serve/serving_loop.hpp"

namespace inferlab::server {

struct LoadgenOptions {
  std::string url;              // http(s)://host:port of any OpenAI-compatible server
  std::string model;            // the "model" field; empty: the first of GET /v1/models
  int64_t vocab_size = 32000;   // prompt ids are drawn below it
  uint64_t seed = 1;            // prompt ids
  double timeout_s = 600;       // per request; past it the request fails
  int64_t max_concurrency = 0;  // 0: open loop, no cap
  std::string api_key;          // sent as `Authorization: Bearer <key>` when not empty
  std::string ca_cert;          // https: the certificate (PEM) to trust instead of the system's
};

// A measured run in the simulator's terms: each request's arrival (when it was sent), first
// token and finish on one clock starting at 0, and its token gaps, so that `summarize` gives the
// same summary as `inferlab serve`. A failed request is marked rejected.
struct LoadgenResult {
  ServeResult run;
  int64_t failed = 0;
  std::vector<std::string> failures;  // the first few reasons
  std::string model;
};

// The prompt ids request `index` sends: drawn from (seed, index) below vocab_size, except that
// the first prefix_tokens ids of a request with prefix_id >= 0 are drawn from (seed, prefix id),
// the same for every request with that id (so a server's prefix cache can hit).
std::vector<int32_t> loadgen_prompt(const ServeRequest& request, size_t index, uint64_t seed,
                                    int64_t vocab_size);

// The first model id the server lists; InputError when the server cannot be reached or answers
// something else.
std::string first_served_model(const LoadgenOptions& options);

// Sends every request at its arrival time (open loop) as a streamed /v1/completions with a
// token-id prompt, max_tokens = min_tokens = output_tokens and ignore_eos (vLLM's benchmark
// does the same), and measures TTFT, inter-token gaps and end-to-end time per request like
// vLLM's benchmark_serving. A request fails on a connection error, a non-200 status, a stream
// that ends without [DONE], fewer tokens than asked, or the timeout.
LoadgenResult run_loadgen(const std::vector<ServeRequest>& requests, const LoadgenOptions& options);

}  // namespace inferlab::server
