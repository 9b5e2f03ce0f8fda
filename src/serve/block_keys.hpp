#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace inferlab {

// Prefix-cache keys of a prompt's full KV blocks, as vLLM keys them: a hash chain, where block
// i's key hashes block i's tokens together with block i-1's key, so two prompts share block i's
// key only when they share every token up to its end. A cached block is found by its key.
//
// From real token ids (the server): one key per full block of `block_size` tokens.
std::vector<uint64_t> token_block_keys(std::span<const int32_t> tokens, int64_t block_size);
// From a workload's shared-prefix id (the simulator, whose requests carry lengths, not tokens):
// keys for the prefix's `blocks` full blocks that only requests with the same prefix id share.
std::vector<uint64_t> prefix_block_keys(int64_t prefix_id, int64_t blocks);

}  // namespace inferlab
