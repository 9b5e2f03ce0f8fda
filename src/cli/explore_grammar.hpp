#pragma once
#include <string>
#include <vector>

#include "explore/design_space.hpp"

namespace inferlab::cli {

// The text forms of an ExploreRequest's parts (--vary, --workload). Errors are FieldErrors
// naming the ExploreRequest field.

// Parses "cores=66,132,memory=HBM3,DDR5": a token with '=' starts a key, the tokens after it
// are more values of that key. An error for an empty value list or a missing key.
std::vector<DesignAxis> parse_design_axes(const std::string& text);

// "decode:context=2048,batch=max" or "prefill:tokens=2048,batch=1".
DesignWorkload parse_design_workload(const std::string& text);

}  // namespace inferlab::cli
