#pragma once
#include <string>

#include "serve/workload.hpp"

namespace inferlab::cli {

// The text forms of a WorkloadSpec's parts (--input-dist, --output-dist, --arrival,
// --shared-prefix). Errors are FieldErrors naming the WorkloadSpec field, as the library's
// own checks do.

// "fixed:N", "uniform:LO,HI", "normal:MEAN,SD", "lognormal:MEAN,SIGMA", or
// "empirical:V1,V2,..." / "empirical:@FILE" (one count per line). `field` is the WorkloadSpec
// field the distribution sets (input, output): errors name it.
LengthDistribution parse_length_distribution(const std::string& text, const std::string& field);

// "poisson", "gamma:CV" or "bursty:PERIOD_S,DUTY".
ArrivalProcess parse_arrival_process(const std::string& text);

// "tokens=N,groups=G[,share=F]".
SharedPrefixSpec parse_shared_prefix(const std::string& text);

}  // namespace inferlab::cli
