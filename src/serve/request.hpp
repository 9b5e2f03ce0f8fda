#pragma once
#include <cstdint>
#include <vector>

namespace inferlab {

// One request of a serving workload, as a trace gives it or a generator draws it. The prompt
// includes the shared prefix (when prefix_id >= 0, its first prefix_tokens tokens are the same
// for every request with that id).
struct ServeRequest {
  double arrival_s = 0.0;
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 1;  // tokens generated, the first one included
  int64_t prefix_id = -1;     // -1: no shared prefix
  int64_t prefix_tokens = 0;
  // Prefix-cache keys of the prompt's full blocks from its real tokens (serve/block_keys; the
  // server sets them). Empty: keys derived from prefix_id for its prefix_tokens.
  std::vector<uint64_t> block_keys;
};

// What happened to one request.
struct RequestOutcome {
  double arrival_s = 0.0;
  double first_token_s = -1.0;  // absolute time of the first token; < 0: never
  double finish_s = -1.0;
  int64_t prompt_tokens = 0, output_tokens = 0;
  int64_t prefix_hit_tokens = 0;  // prompt tokens served from the prefix cache
  int preemptions = 0;
  bool rejected = false;              // never run: past max_model_len, or could never fit
  bool past_max_model_len = false;    // rejected because prompt + output > max_model_len
  bool ended_early = false;           // stopped before output_tokens (a stop token, a client gone)
  std::vector<double> inter_token_s;  // gaps between successive token emissions
  double ttft_s() const { return first_token_s - arrival_s; }
  double e2e_s() const { return finish_s - arrival_s; }
  // Time per output token after the first.
  double tpot_s() const {
    return output_tokens > 1 ? (finish_s - first_token_s) / static_cast<double>(output_tokens - 1)
                             : 0.0;
  }
};

}  // namespace inferlab
