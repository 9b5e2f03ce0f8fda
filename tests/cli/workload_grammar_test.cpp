// The text forms of a workload (--input-dist, --output-dist, --arrival, --shared-prefix).
#include "cli/workload_grammar.hpp"

#include <gtest/gtest.h>

#include <string>

#include "util/error.hpp"
#include "util/field_error.hpp"

namespace inferlab::cli {
namespace {

TEST(WorkloadGrammar, ParsesEachForm) {
  auto u = parse_length_distribution("uniform:100,300", "in");
  EXPECT_EQ(u.kind, LengthDistribution::Kind::uniform);
  EXPECT_EQ(u.a, 100);
  EXPECT_EQ(u.b, 300);
  EXPECT_EQ(u.text, "uniform:100,300");
  auto l = parse_length_distribution("lognormal:200,0.5", "out");
  EXPECT_EQ(l.kind, LengthDistribution::Kind::lognormal);
  EXPECT_EQ(l.a, 200);
  EXPECT_EQ(l.b, 0.5);
  auto f = parse_length_distribution("fixed:8", "in");
  EXPECT_EQ(f.kind, LengthDistribution::Kind::fixed);
  EXPECT_EQ(f.a, 8);
  auto e = parse_length_distribution("empirical:3,5,7", "in");
  EXPECT_EQ(e.kind, LengthDistribution::Kind::empirical);
  EXPECT_EQ(e.values, (std::vector<int64_t>{3, 5, 7}));
  auto g = parse_arrival_process("gamma:3");
  EXPECT_EQ(g.kind, ArrivalProcess::Kind::gamma);
  EXPECT_EQ(g.cv, 3);
  auto b = parse_arrival_process("bursty:10,0.25");
  EXPECT_EQ(b.kind, ArrivalProcess::Kind::bursty);
  EXPECT_EQ(b.period_s, 10);
  EXPECT_EQ(b.duty, 0.25);
  EXPECT_EQ(parse_arrival_process("poisson").kind, ArrivalProcess::Kind::poisson);
  auto p = parse_shared_prefix("tokens=500,groups=3,share=0.4");
  EXPECT_EQ(p.tokens, 500);
  EXPECT_EQ(p.groups, 3);
  EXPECT_EQ(p.share, 0.4);
}

TEST(WorkloadGrammar, BadSpecsAreInputErrors) {
  for (const char* bad : {"fixed:0", "fixed:x", "uniform:5", "uniform:9,3", "normal:100,-1",
                          "pareto:1", "empirical:", "empirical:@/nonexistent", "fixed:1e9"}) {
    EXPECT_THROW(parse_length_distribution(bad, "input"), InputError) << bad;
  }
  for (const char* bad :
       {"weibull", "gamma:0", "gamma:x", "bursty:10", "bursty:0,0.5", "bursty:10,2"}) {
    EXPECT_THROW(parse_arrival_process(bad), InputError) << bad;
  }
  EXPECT_THROW(parse_shared_prefix("groups=2"), InputError);
  EXPECT_THROW(parse_shared_prefix("tokens=10,colour=red"), InputError);
}

TEST(WorkloadGrammar, ErrorsNameTheFieldNotAFlag) {
  auto message = [](auto&& call) -> std::string {
    try {
      call();
    } catch (const FieldError& e) {
      return e.what();
    }
    return "no FieldError";
  };
  EXPECT_EQ(message([] { parse_arrival_process("weibull"); }),
            "unknown `arrival` 'weibull'; known: poisson, gamma:CV, bursty:PERIOD_S,DUTY");
  EXPECT_EQ(message([] { parse_length_distribution("fixed:0", "input"); }),
            "`input` fixed:0: token counts must be in [1, 1048576]");
  EXPECT_EQ(message([] { parse_shared_prefix("groups=2"); }), "`prefix` needs tokens=N");
}

}  // namespace
}  // namespace inferlab::cli
