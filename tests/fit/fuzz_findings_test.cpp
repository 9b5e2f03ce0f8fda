// Regression tests for the reference-data parsers' malformed rows (docs/UNTRUSTED_INPUTS.md):
// each used to escape as nlohmann's type_error or out_of_range ("run failed", exit 1).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fit/reference_data.hpp"
#include "util/error.hpp"

namespace inferlab {
namespace {

using nlohmann::json;

TEST(ReferenceDataFuzzFindings, MalformedRowsAreInputErrors) {
  const json linear = {{"op", "linear"}, {"m", 1}, {"n", 8}, {"k", 8}, {"median_s", 1e-5}};
  EXPECT_EQ(measured_ops_from_reference(json{{"ops", {linear}}}, "r").size(), 1u);
  json split = linear;
  split["split"] = 3;  // not a string
  EXPECT_THROW(measured_ops_from_reference(json{{"ops", {split}}}, "r"), InputError);

  const json gemm = {{"m", 1}, {"n", 8}, {"k", 8}, {"median_s", 1e-5}, {"model", false}};
  EXPECT_THROW(measured_ops_from_profile(json{{"sweeps", {{"gemm", {gemm}}}}}, "p"), InputError);
  const json kernel = {{"kernel", "add"}, {"median_s", 1e-5}};  // no 'shape'
  EXPECT_THROW(measured_ops_from_profile(json{{"sweeps", {{"llm_kernels", {kernel}}}}}, "p"),
               InputError);
}

}  // namespace
}  // namespace inferlab
