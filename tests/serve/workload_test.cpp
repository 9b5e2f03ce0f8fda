#include "serve/workload.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "serve/block_keys.hpp"
#include "serve/block_manager.hpp"
#include "util/error.hpp"
#include "util/field_error.hpp"

namespace inferlab {
namespace {

// The structs as cli/workload_grammar would build them from "fixed:N", "uniform:LO,HI", ...
// (its own tests are in tests/cli/workload_grammar_test.cpp).
LengthDistribution fixed(double n) {
  LengthDistribution d;
  d.kind = LengthDistribution::Kind::fixed;
  d.a = n;
  return d;
}
LengthDistribution two_numbers(LengthDistribution::Kind kind, double a, double b) {
  LengthDistribution d;
  d.kind = kind;
  d.a = a, d.b = b;
  return d;
}
ArrivalProcess gamma_arrivals(double cv) {
  ArrivalProcess a;
  a.kind = ArrivalProcess::Kind::gamma;
  a.cv = cv;
  return a;
}
ArrivalProcess bursty_arrivals(double period_s, double duty) {
  ArrivalProcess a;
  a.kind = ArrivalProcess::Kind::bursty;
  a.period_s = period_s, a.duty = duty;
  return a;
}

TEST(ServeWorkload, GeneratorIsReproducibleAndHasTheAskedMoments) {
  WorkloadSpec w;
  w.requests = 20000;
  w.rate_per_s = 4.0;
  w.input = two_numbers(LengthDistribution::Kind::uniform, 100, 300);
  w.output = two_numbers(LengthDistribution::Kind::lognormal, 200, 0.5);
  auto a = generate_workload(w), b = generate_workload(w);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a[123].prompt_tokens, b[123].prompt_tokens);
  EXPECT_EQ(a[123].arrival_s, b[123].arrival_s);
  double in = 0, out = 0;
  for (const auto& r : a) in += r.prompt_tokens, out += r.output_tokens;
  EXPECT_NEAR(in / 20000, 200.0, 2.0);
  EXPECT_NEAR(out / 20000, 200.0, 4.0);                 // lognormal parameterised by its mean
  EXPECT_NEAR(a.back().arrival_s / 20000, 0.25, 0.01);  // mean gap 1 / rate
  w.seed = 2;
  EXPECT_NE(generate_workload(w)[5].prompt_tokens, a[5].prompt_tokens);
}

TEST(ServeWorkload, GammaAndBurstyArrivalsKeepTheMeanRate) {
  WorkloadSpec w;
  w.requests = 20000;
  w.rate_per_s = 10.0;
  w.input = fixed(8);
  w.output = fixed(8);
  w.arrival = gamma_arrivals(3);
  auto g = generate_workload(w);
  EXPECT_NEAR(g.back().arrival_s / 20000, 0.1, 0.01);
  // Squared coefficient of variation of the gaps: 9.
  double sum = 0, sum2 = 0, prev = 0;
  for (const auto& r : g) {
    const double gap = r.arrival_s - prev;
    prev = r.arrival_s;
    sum += gap, sum2 += gap * gap;
  }
  const double mean = sum / 20000;
  EXPECT_NEAR((sum2 / 20000 - mean * mean) / (mean * mean), 9.0, 1.0);
  // Bursty: everything lands in the first quarter of each 10 s period.
  w.arrival = bursty_arrivals(10, 0.25);
  auto b = generate_workload(w);
  for (const auto& r : b) EXPECT_LT(std::fmod(r.arrival_s, 10.0), 2.5 + 1e-9);
  EXPECT_NEAR(b.back().arrival_s / 20000, 0.1, 0.01);
}

TEST(ServeWorkload, SharedPrefixIsAddedToTheChosenShare) {
  WorkloadSpec w;
  w.requests = 10000;
  w.input = fixed(100);
  w.output = fixed(10);
  w.prefix = {500, 3, 0.4};
  auto r = generate_workload(w);
  int with = 0;
  for (const auto& q : r) {
    if (q.prefix_id >= 0) {
      ++with;
      EXPECT_EQ(q.prompt_tokens, 600);
      EXPECT_LT(q.prefix_id, 3);
    } else {
      EXPECT_EQ(q.prompt_tokens, 100);
    }
  }
  EXPECT_NEAR(with / 10000.0, 0.4, 0.02);
}

TEST(ServeWorkload, BadSpecsAreInputErrors) {
  WorkloadSpec w;
  w.input = w.output = fixed(1);
  w.requests = 0;
  EXPECT_THROW(generate_workload(w), InputError);
  w.requests = 1;
  w.rate_per_s = -1;
  EXPECT_THROW(generate_workload(w), InputError);
}

TEST(ServeWorkload, ErrorsNameTheFieldNotAFlag) {
  auto message = [](auto&& call) -> std::string {
    try {
      call();
    } catch (const FieldError& e) {
      return e.what();
    }
    return "no FieldError";
  };
  WorkloadSpec w;
  w.requests = 0;
  EXPECT_EQ(message([&] { generate_workload(w); }), "`requests` must be in [1, 16777216]");
}

class TraceFiles : public ::testing::Test {
 protected:
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("inferlab_trace_" + std::to_string(::getpid()));
  void SetUp() override { std::filesystem::create_directories(dir); }
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
};

TEST_F(TraceFiles, JsonlAndCsvTraces) {
  auto jsonl =
      load_trace(write("t.jsonl",
                       "{\"arrival_s\": 0.5, \"prompt_tokens\": 10, \"output_tokens\": 3}\n"
                       "\n"
                       "{\"arrival_s\": 1, \"prompt_tokens\": 20, \"output_tokens\": 4, "
                       "\"prefix_id\": 2, \"prefix_tokens\": 8}\n"));
  ASSERT_EQ(jsonl.size(), 2u);
  EXPECT_EQ(jsonl[1].prefix_id, 2);
  EXPECT_EQ(jsonl[1].prefix_tokens, 8);
  EXPECT_EQ(jsonl[0].prefix_id, -1);
  auto csv =
      load_trace(write("t.csv", "arrival_s,prompt_tokens,output_tokens\n0,5,6\r\n2.5,7,8\n"));
  ASSERT_EQ(csv.size(), 2u);
  EXPECT_EQ(csv[1].output_tokens, 8);
  EXPECT_DOUBLE_EQ(csv[1].arrival_s, 2.5);
}

TEST_F(TraceFiles, MalformedTracesNameTheLine) {
  auto expect_error = [&](const std::string& name, const std::string& text, const char* what) {
    try {
      load_trace(write(name, text));
      ADD_FAILURE() << "no error for " << text;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  expect_error("a.jsonl", "{\"arrival_s\": 0, \"prompt_tokens\": 5}\n", "output_tokens");
  expect_error("b.jsonl", "{\"arrival_s\": 0,\n", "line 1");
  expect_error("c.jsonl", "{\"arrival_s\": -1, \"prompt_tokens\": 5, \"output_tokens\": 1}\n",
               "arrival_s");
  expect_error("d.jsonl", "{\"arrival_s\": 0, \"prompt_tokens\": 2.5, \"output_tokens\": 1}\n",
               "whole number");
  expect_error("e.csv", "arrival_s,prompt_tokens,output_tokens\n0,5\n", "line 2");
  expect_error("f.csv", "arrival_s,prompt_tokens,output_tokens\n0,five,1\n", "not a number");
  expect_error("g.jsonl", "", "no requests");
  EXPECT_THROW(load_trace((dir / "missing.jsonl").string()), InputError);
}

// A trace line is bounded (kMaxTraceLineBytes) and refused as it is read, not after a line of
// any length was taken into memory; a line just under the bound is still read.
TEST_F(TraceFiles, LineOverTheLimitIsRefused) {
  const std::string row = "{\"arrival_s\": 0, \"prompt_tokens\": 5, \"output_tokens\": 1}";
  const std::string padded = row + std::string(kMaxTraceLineBytes - row.size(), ' ');
  EXPECT_EQ(load_trace(write("ok.jsonl", padded + "\n")).size(), 1u);
  try {
    load_trace(write("long.jsonl", row + "\n" + padded + " \n"));
    ADD_FAILURE() << "no error for a line over the limit";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("line 2: longer than 65536 bytes"), std::string::npos)
        << e.what();
  }
  std::istringstream endless(std::string(kMaxTraceLineBytes * 4, '1'));
  EXPECT_THROW(parse_trace(endless, TraceFormat::csv, "stream"), InputError);
}

// Fuzz finding (trace; fuzz/corpus/trace/finding-number-out-of-range.jsonl): a number beyond
// double's range escaped as nlohmann's out_of_range (exit 1) instead of an InputError naming the
// line.
TEST_F(TraceFiles, NumberOutOfRangeIsAnInputError) {
  try {
    load_trace(
        write("big.jsonl", "{\"arrival_s\": 0, \"prompt_tokens\": 5e999, \"output_tokens\": 1}\n"));
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("line 1: malformed JSON"), std::string::npos) << e.what();
  }
}

TEST(ServeBlocks, AllocationReleaseAndPrefixSharing) {
  BlockManager m(10, 4, true);
  const std::vector<uint64_t> keys = prefix_block_keys(/*prefix_id=*/5, /*blocks=*/2);
  EXPECT_EQ(m.blocks_for(9), 3);
  ASSERT_TRUE(m.grow(1, 9));  // 3 blocks
  EXPECT_EQ(m.free_blocks(), 7);
  m.mark_computed(1, 9, keys);
  EXPECT_EQ(m.cached_prefix_blocks(keys), 2);
  EXPECT_EQ(m.acquire_prefix(2, keys), 2);  // shared, not copied
  EXPECT_EQ(m.free_blocks(), 7);
  ASSERT_TRUE(m.grow(2, 12));  // one more of its own
  EXPECT_EQ(m.free_blocks(), 6);
  m.release(1);  // the shared blocks are still held by 2; its own third block is free
  EXPECT_EQ(m.free_blocks(), 7);
  m.release(2);  // now the prefix blocks are cached but evictable: they count as free
  EXPECT_EQ(m.free_blocks(), 10);
  EXPECT_EQ(m.cached_prefix_blocks(keys), 2);
  EXPECT_FALSE(m.grow(3, 41));  // 11 blocks: more than exist, nothing taken
  EXPECT_EQ(m.free_blocks(), 10);
  ASSERT_TRUE(m.grow(3, 40));  // takes every block: the cached ones are evicted
  EXPECT_EQ(m.evictions(), 2);
  EXPECT_EQ(m.cached_prefix_blocks(keys), 0);
}

}  // namespace
}  // namespace inferlab
