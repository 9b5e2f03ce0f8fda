#pragma once
// Teacher-forced logits, as `inferlab logits` and Python's Engine.logits compute them: one
// prefill of the first `prefill` tokens giving every position's logits, then one decode step per
// remaining token.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/backend.hpp"

namespace inferlab::engine {

// Row-major [ids.size(), vocab] fp32 logits of `ids` on `backend`, the sequence's KV in
// `block_table` (which must cover ids.size() positions). 1 <= prefill <= ids.size().
std::vector<float> teacher_forced_logits(Backend& backend, std::span<const int32_t> ids,
                                         int64_t prefill, BlockTable block_table);

}  // namespace inferlab::engine
