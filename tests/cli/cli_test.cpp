// The CLI contract: exact field names, one JSON object on stdout, and for bad input a clear
// "inferlab: error:" on stderr, exit code 2 and nothing on stdout.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "probe/probe.hpp"
#include "test_support.hpp"

namespace inferlab {
namespace {

using testing::run_inferlab;

nlohmann::json run_json(const std::string& args) {
  return testing::run_inferlab_json(args);
}

TEST(Cli, DefaultPredictPrintsTheSummaryAndBothBreakdowns) {
  auto r = run_inferlab("predict");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* text :
       {"llama-3.2-1b", "H100", "TTFT (ms)", "TPOT (ms)", "end-to-end", "decode tokens/s", "fits",
        "Prefill step", "Decode step", "qkv_proj", "attention", "bound", "efficiency"}) {
    EXPECT_NE(r.out.find(text), std::string::npos) << text;
  }
}

TEST(Cli, PredictJsonContract) {
  auto j = run_json(
      "predict --model llama-3-8b --hardware h100-sxm --batch 2 --input 256 "
      "--output 16");
  for (const char* key : {"prefill_ms", "ttft_ms", "tpot_ms", "e2e_ms", "decode_tokens_per_s"}) {
    ASSERT_TRUE(j.contains(key)) << key;
    EXPECT_GT(j[key].get<double>(), 0.0) << key;
  }
  for (const char* key :
       {"weights_bytes", "kv_cache_bytes", "activations_bytes", "total_bytes", "capacity_bytes"}) {
    EXPECT_TRUE(j["memory"].contains(key)) << key;
  }
  EXPECT_TRUE(j["memory"]["fits"].get<bool>());
  // KV: 2 sequences x 272 tokens x 128 KiB.
  EXPECT_DOUBLE_EQ(j["memory"]["kv_cache_bytes"].get<double>(), 2.0 * 272 * 131072);
  ASSERT_EQ(j["phases"].size(), 2u);
  EXPECT_EQ(j["phases"][0]["phase"], "prefill");
  EXPECT_EQ(j["phases"][1]["phase"], "decode");
  const auto& op = j["phases"][0]["ops"][0];
  for (const char* key : {"name", "kind", "count", "flops", "bytes", "ms", "bound", "efficiency"}) {
    EXPECT_TRUE(op.contains(key)) << key;
  }
  EXPECT_NEAR(j["e2e_ms"].get<double>(),
              j["ttft_ms"].get<double>() + 15 * j["tpot_ms"].get<double>(), 1e-6);
}

// Outputs that rest on paths no measurement checked say so (predict/validity.hpp).
TEST(Cli, PredictNamesUnvalidatedPaths) {
  auto measured = run_json("predict --framework pytorch --hardware h100-sxm");
  EXPECT_TRUE(measured["unvalidated"].empty());
  auto vllm = run_json("predict --hardware h100-sxm");
  ASSERT_EQ(vllm["unvalidated"].size(), 1u);
  EXPECT_NE(vllm["unvalidated"][0].get<std::string>().find("vLLM run"), std::string::npos);
  auto table = run_inferlab("predict --hardware a100-80g --weights int4");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("note: unvalidated: no step was measured on a100-80g"),
            std::string::npos);
  EXPECT_NE(table.out.find("note: unvalidated: quantized kernels"), std::string::npos);
  // Tensor parallelism: the H200's collectives measured inside graphs over 4 GPUs price it as
  // checked (§34); 8 GPUs have no curve, so the sheet's link does, and says so.
  auto tp4 = run_json("predict --framework pytorch --hardware h200 --model llama-3-70b --tp 4");
  EXPECT_TRUE(tp4["unvalidated"].empty()) << tp4["unvalidated"].dump();
  auto tp8 = run_json("predict --framework pytorch --hardware h200 --model llama-3-70b --tp 8");
  ASSERT_EQ(tp8["unvalidated"].size(), 1u);
  EXPECT_NE(tp8["unvalidated"][0].get<std::string>().find("no NCCL curve over 8 GPUs"),
            std::string::npos);
}

TEST(Cli, Llama70BFitsOnlyWithTensorParallelism) {
  auto one = run_json("predict --model llama-3-70b --hardware h100-sxm");
  EXPECT_FALSE(one["memory"]["fits"].get<bool>());
  auto four = run_json("predict --model llama-3-70b --hardware h100-sxm --tp 4");
  EXPECT_TRUE(four["memory"]["fits"].get<bool>());
}

// PyTorch's separate q, k, v, gate and up projections are five GEMMs where gpt-fast's fused
// layout runs two: the same bytes and FLOPs in fewer, larger kernels, so the fused prefill is no
// slower and names qkv_proj where the separate one names q_proj. Other frameworks always fuse.
TEST(Cli, ProjectionLayoutPicksPyTorchsKernels) {
  const std::string base = "predict --model llama-3-8b --hardware h200 --framework pytorch";
  auto separate = run_json(base + " --projection-layout separate");
  auto fused = run_json(base + " --projection-layout fused_qkv_gate_up");
  EXPECT_LE(fused["prefill_ms"].get<double>(), separate["prefill_ms"].get<double>());
  EXPECT_NE(separate.dump().find("\"q_proj\""), std::string::npos);
  EXPECT_EQ(fused.dump().find("\"q_proj\""), std::string::npos);
  EXPECT_EQ(run_json(base)["prefill_ms"], separate["prefill_ms"]);  // the default
  for (const char* bad : {" --projection-layout fused_everything",
                          " --projection-layout fused_qkv_gate_up --framework vllm"}) {
    auto r = run_inferlab("predict --model llama-3-8b --hardware h200" + std::string(bad));
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.err.find("inferlab: error:"), std::string::npos) << r.err;
  }
}

TEST(Cli, StepAndOpContracts) {
  auto s = run_json("step --model llama-3-8b --phase decode --batch 4 --context 1024");
  EXPECT_GT(s["ms"].get<double>(), 0.0);
  EXPECT_FALSE(s["ops"].empty());
  auto p = run_json("step --model llama-3-8b --phase prefill --batch 1 --tokens 512");
  EXPECT_GT(p["ms"].get<double>(), s["ms"].get<double>());
  auto g = run_json("op gemm --m 4096 --n 4096 --k 4096 --hardware h100-sxm");
  EXPECT_DOUBLE_EQ(g["flops"].get<double>(), 2.0 * 4096 * 4096 * 4096);
  EXPECT_EQ(g["bound"], "compute");
  // The calibrated GEMM shows its tiling: one token through 4096 x 4096 runs in one wave of
  // 128 CTAs from split-K over one row of 8- or 16-row tiles at least 64 columns wide, as
  // cuBLAS runs it (profiled: 8x64 tiles, k split in two; the model may pick 128 columns and
  // a split of four, the same CTAs).
  auto v = run_json("op gemm --m 1 --n 4096 --k 4096 --hardware h100-sxm --cost calibrated");
  const auto& plan = v["plan"];
  EXPECT_LE(plan["tile_m"].get<int>(), 16);
  EXPECT_GE(plan["tile_n"].get<int>(), 64);
  EXPECT_GE(plan["split_k"].get<int>(), 2);
  EXPECT_EQ(4096 / plan["tile_n"].get<int>() * plan["split_k"].get<int>(), 128);
  EXPECT_EQ(plan["ctas"], 128);
  EXPECT_EQ(plan["waves"], 1);
  EXPECT_FALSE(run_json("op gemm --m 1 --n 8 --k 8 --cost roofline").contains("plan"));
  auto a = run_json(
      "op attention --phase decode --batch 8 --heads 32 --kv-heads 8 "
      "--head-dim 128 --context 4096");
  EXPECT_EQ(a["bound"], "memory");
  EXPECT_DOUBLE_EQ(a["bytes"].get<double>(), 2.0 * 8 * 4096 * 8 * 128 * 2 + 2.0 * 8 * 32 * 128 * 2);
  auto ap = run_json(
      "op attention --phase prefill --batch 1 --heads 32 --kv-heads 8 "
      "--seq 2048 --causal");
  EXPECT_DOUBLE_EQ(ap["flops"].get<double>(), 4.0 * 32 * 128 * (2048.0 * 2049 / 2));
  EXPECT_EQ(run_json("op rmsnorm --tokens 4096 --hidden 4096")["bound"], "memory");
  EXPECT_DOUBLE_EQ(run_json("op add --tokens 10 --hidden 100")["bytes"].get<double>(), 6000.0);
  EXPECT_GT(run_json("op silu_mul --tokens 512 --intermediate 14336")["ms"].get<double>(), 0.0);
  EXPECT_GT(run_json("op softmax --rows 4096 --cols 4096")["ms"].get<double>(), 0.0);
}

// `op` answers both times a user can measure: `ms` in a stream or graph, back to back, and
// `isolated_ms`, one call timed alone with the L2 flushed (what `validate` compares operators
// with). On a small GEMM the fixed costs of a call timed alone dominate.
TEST(Cli, OpReportsInStreamAndIsolatedTimes) {
  const std::string gemm = "op gemm --m 1 --n 2048 --k 2048 --hardware h100-sxm --cost calibrated";
  auto j = run_json(gemm);
  ASSERT_TRUE(j.contains("ms"));
  ASSERT_TRUE(j.contains("isolated_ms"));
  EXPECT_GT(j["ms"].get<double>(), 0.0);
  EXPECT_GE(j["isolated_ms"].get<double>(), j["ms"].get<double>());
  // The same GEMM in a reference file: validate predicts exactly isolated_ms for it.
  auto path = std::filesystem::temp_directory_path() /
              ("inferlab_cli_isolated_" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << R"({"ops": [{"op": "linear", "m": 1, "n": 2048, "k": 2048,
                                      "median_s": 1e-5}]})";
  auto v = run_json("validate --hardware h100-sxm --cost calibrated --data " + path.string());
  std::filesystem::remove(path);
  ASSERT_EQ(v["cases"].size(), 1u);
  EXPECT_EQ(v["cases"][0]["predicted_ms"].get<double>(), j["isolated_ms"].get<double>());
  // The table shows both.
  auto table = run_inferlab(gemm);
  EXPECT_NE(table.out.find("isolated_ms"), std::string::npos);
  // Every cost model answers it.
  for (const char* cost : {"roofline", "tilesim"}) {
    auto other =
        run_json("op gemm --m 1 --n 2048 --k 2048 --hardware h100-sxm --cost " + std::string(cost));
    EXPECT_GE(other["isolated_ms"].get<double>(), other["ms"].get<double>()) << cost;
  }
}

// step's and predict's per-operator rows carry isolated_ms beside ms (over all instances).
TEST(Cli, StepAndPredictOpsCarryIsolatedTimes) {
  auto s = run_json("step --phase decode --batch 1 --context 1024 --hardware h100-sxm");
  ASSERT_FALSE(s["ops"].empty());
  for (const auto& op : s["ops"]) {
    ASSERT_TRUE(op.contains("isolated_ms")) << op["name"];
    EXPECT_GT(op["isolated_ms"].get<double>(), 0.0) << op["name"];
  }
  auto p = run_json("predict --hardware h100-sxm");
  for (const auto& phase : p["phases"]) {
    for (const auto& op : phase["ops"]) EXPECT_TRUE(op.contains("isolated_ms")) << op["name"];
  }
}

TEST(Cli, SimulateJsonContract) {
  // GPT-3 175B prefill of 2048 tokens on 4 A100s (tensor parallel): every operator mapped.
  auto j = run_json(
      "simulate --model gpt3-175b --hardware a100-80g --devices 4 --phase prefill --tokens 2048");
  EXPECT_EQ(j["tp"], 4);
  EXPECT_EQ(j["pp"], 1);
  EXPECT_GT(j["ms"].get<double>(), 0.0);
  EXPECT_FALSE(j["memory"]["fits"].get<bool>());  // 350 GB of weights over 4 x 80 GB
  // The unfused form writes and reads the 2048 x 2048 score matrices: slower at prefill.
  EXPECT_DOUBLE_EQ(j["attention_forms_ms"]["flash"].get<double>(), j["ms"].get<double>());
  EXPECT_GT(j["attention_forms_ms"]["unfused"].get<double>(), j["ms"].get<double>());
  bool gemm_mapped = false;
  for (const auto& op : j["ops"]) {
    if (op["kind"] == "gemm") gemm_mapped = op["mapping"].get<std::string>().find("tile") == 0;
  }
  EXPECT_TRUE(gemm_mapped);
  // Two pipeline stages: half the layers per device, plus one hand-off.
  auto pp = run_json(
      "simulate --model gpt3-175b --hardware a100-80g --devices 8 --pp 2 --phase decode "
      "--context 2048 --batch 8");
  EXPECT_EQ(pp["tp"], 4);
  EXPECT_EQ(pp["layers_per_stage"], 48);
  EXPECT_GT(pp["p2p_ms"].get<double>(), 0.0);
  // The tilesim cost model behind the common commands.
  auto g = run_json("op gemm --m 4096 --n 4096 --k 4096 --hardware h100-sxm-ddr5 --cost tilesim");
  EXPECT_GT(g["ms"].get<double>(), 0.0);
}

TEST(Cli, AreaAndExploreContracts) {
  auto a = run_json("area --hardware a100-80g");
  EXPECT_NEAR(a["die_area_mm2"].get<double>() / 826.0, 1.0, 0.10);
  EXPECT_EQ(a["published_die_area_mm2"], 826);
  double sum = 0.0;
  for (const auto& [name, part] : a["components"].items()) sum += part["area_mm2"].get<double>();
  EXPECT_NEAR(sum, a["die_area_mm2"].get<double>(), 1e-6);
  EXPECT_NEAR(a["total_cost_usd"].get<double>(),
              a["die_cost_usd"].get<double>() + a["memory_cost_usd"].get<double>() +
                  a["package_cost_usd"].get<double>(),
              1e-6);
  EXPECT_TRUE(run_json("area --hardware h100-sxm-ddr5")["published_die_area_mm2"].is_null());
  auto e = run_json(
      "explore --template h100-sxm --vary cores=66,132 --model llama-3.2-1b --workload "
      "decode:context=512,batch=8");
  ASSERT_EQ(e["designs"].size(), 2u);
  EXPECT_EQ(e["designs"][0]["settings"]["cores"], "66");
  EXPECT_EQ(e["designs"][0]["batch"], 8);
  EXPECT_GT(e["designs"][1]["tokens_per_s"].get<double>(), 0.0);
  EXPECT_GE(e["pareto_front"].size(), 1u);
}

TEST(Cli, ServeAndCapacityContracts) {
  auto s = run_json(
      "serve --model llama-3.2-1b --rate 5 --requests 50 --input-dist fixed:256 "
      "--output-dist fixed:16 --policy chunked --slo ttft_p99=1000,tpot_p99=100");
  EXPECT_EQ(s["requests"], 50);
  EXPECT_EQ(s["completed"], 50);
  EXPECT_TRUE(s["fits"].get<bool>());
  EXPECT_EQ(s["policy"], "chunked");
  EXPECT_GT(s["kv_cache"]["blocks"].get<int64_t>(), 0);
  EXPECT_LE(s["ttft_ms"]["p50"].get<double>(), s["ttft_ms"]["p99"].get<double>());
  EXPECT_GT(s["output_tokens_per_s"].get<double>(), 0.0);
  EXPECT_NEAR(s["slo_attainment"].get<double>(), 1.0, 1e-12);
  // A model that does not fit is a result.
  auto big = run_json("serve --model llama-3.1-405b --hardware h100-sxm --requests 5");
  EXPECT_FALSE(big["fits"].get<bool>());
  auto c = run_json(
      "capacity --model llama-3.2-1b --hardware h100-sxm,a100-80g --tp 1,3 --requests 100 "
      "--input-dist fixed:256 --output-dist fixed:32 --slo ttft_p99=500,tpot_p99=20 "
      "--price h100-sxm=2.5,a100-80g=1.5");
  ASSERT_EQ(c["configurations"].size(), 4u);
  const auto& first = c["configurations"][0];
  EXPECT_GT(first["max_rate_per_s"].get<double>(), 0.0);
  EXPECT_LE(first["tpot_p99_ms"].get<double>(), 20.0);
  // tp 3 does not divide the heads: listed last with the reason.
  EXPECT_EQ(c["configurations"][3]["max_rate_per_s"], 0.0);
  EXPECT_NE(c["configurations"][3]["note"].get<std::string>().find("divide"), std::string::npos);
}

TEST(Cli, CatalogsListEverything) {
  EXPECT_EQ(run_json("models")["models"].size(), 14u);
  EXPECT_EQ(run_json("templates")["templates"].size(), 9u);
  auto hw = run_json("hardware")["hardware"];
  EXPECT_EQ(hw.size(), 13u);
  EXPECT_TRUE(hw[0].contains("sources"));
}

TEST(Cli, SweepCsvHasOneRowPerPoint) {
  auto r = run_inferlab(
      "sweep --model llama-3.2-1b --batch 1,8 --input 128,512 --output 32 "
      "--weights bf16,int4 --format csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1 + 2 * 2 * 2);
  EXPECT_EQ(r.out.rfind("batch,input,output,tp,weights", 0), 0u);
}

TEST(Cli, PredictCsvIsRawNumbers) {
  auto r = run_inferlab("predict --format csv");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("phase,op,kind,count,flops,bytes,ms", 0), 0u);
  EXPECT_EQ(r.out.find(" GB"), std::string::npos);
}

struct BadInput {
  const char* args;
  const char* expect_in_message;
};

class CliBadInput : public ::testing::TestWithParam<BadInput> {};

TEST_P(CliBadInput, ExitsTwoWithAClearMessageAndNoStdout) {
  auto r = run_inferlab(GetParam().args);
  EXPECT_EQ(r.exit_code, 2) << GetParam().args << "\n" << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(r.err.rfind("inferlab: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(GetParam().expect_in_message), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CliBadInput,
    ::testing::Values(
        BadInput{"predict --model llama-9b", "known: "},
        BadInput{"predict --hardware h900", "known: "},
        BadInput{"predict --model /nonexistent/config.json", "does not exist"},
        BadInput{"predict --batch 0", "--batch"}, BadInput{"predict --batch -4", "--batch"},
        BadInput{"predict --batch 99999999999999999999999", "batch"},
        BadInput{"predict --batch abc", "batch"}, BadInput{"predict --input 0", "--input"},
        BadInput{"predict --model llama-3-8b --tp 3", "does not divide"},
        BadInput{"predict --weights int3", "unknown dtype"}, BadInput{"predict --kv int4", "--kv"},
        BadInput{"predict --hardware a100-80g --weights fp8 --activations fp8", "fp8"},
        BadInput{"predict --framework tensorrt", "pytorch, vllm"},
        BadInput{"predict --cuda-graphs maybe", "on or off"},
        BadInput{"predict --format xml", "table, json, csv"},
        BadInput{"predict --delay-factor gemm", "class=value"},
        BadInput{"predict --delay-factor warp=2", "unknown operator class"},
        BadInput{"predict --batch", "batch"}, BadInput{"predict --no-such-flag", "no-such-flag"},
        BadInput{"frobnicate", "frobnicate"}, BadInput{"", "subcommand"},
        BadInput{"step --phase middle --tokens 5", "prefill or decode"},
        BadInput{"step --phase decode", "--context"}, BadInput{"op gemm --m 0 --n 1 --k 1", "--m"},
        BadInput{"op gemm --m 1 --n 1", "--k"},
        BadInput{"op attention --heads 32 --kv-heads 5 --seq 10", "multiple"},
        BadInput{"op gemm --m 8 --n 8 --k 8 --dtype int4 --hardware h100-sxm", "int4"},
        BadInput{"sweep --batch 1,0", "--batch"},
        BadInput{"fit --data /nonexistent.json", "does not exist"},
        BadInput{"fit --hardware a100-80g", "nothing to fit"},
        BadInput{"predict --profile /nonexistent/profile.json", "does not exist"},
        BadInput{"roofline --out /nonexistent-dir/r.svg", "cannot write"},
        BadInput{"roofline", "--out"}, BadInput{"probe", "--out"},
        BadInput{"predict --cost magic", "auto, roofline, calibrated"},
        BadInput{"predict --hardware mi210 --cost calibrated", "no calibration applies"},
        BadInput{"predict --cost calibrated --calibration /nonexistent/cal.json", "does not exist"},
        BadInput{"validate --data /nonexistent.json --split nope", "all, fit or holdout"},
        BadInput{"fit --cost tilesim --data /nonexistent.json", "does not exist"},
        BadInput{"fit --cost calibrated --hardware h100-sxm --sustained /nonexistent.json",
                 "does not exist"},
        BadInput{"simulate --phase prefill --tokens 8 --devices 3 --pp 2", "must equal"},
        BadInput{"simulate --hardware no-such-chip --phase decode --context 8", "known: "},
        BadInput{"simulate --phase decode --context 8 --pp 0", "at least 1"},
        BadInput{"simulate --phase decode --context 0", "--context"},
        BadInput{"simulate --model gpt3-175b --hardware a100-80g --devices 16 --phase decode "
                 "--context 8",
                 "per node"},
        BadInput{"op gemm --m 8 --n 8 --k 8 --cost tilesim --hardware h900", "known: "},
        BadInput{"area --hardware h900", "known: "},
        BadInput{"area --hardware /nonexistent/chip.json", "does not exist"},
        BadInput{"explore --vary cores=", "no values"},
        BadInput{"explore --vary warp=2", "unknown key"},
        BadInput{"explore --vary cores=abc", "not a number"},
        BadInput{"explore --vary memory=SRAM", "unknown memory type"},
        BadInput{"explore --vary cores=1 --workload train", "prefill or decode"},
        BadInput{"explore --vary cores=1 --devices 3 --pp 2", "multiple of --pp"},
        BadInput{"explore --vary cores=1 --svg /nonexistent-dir/p.svg", "cannot write"},
        BadInput{"serve --policy fifo", "vllm, chunked, orca, static"},
        BadInput{"serve --preemption drop", "recompute or swap"},
        BadInput{"serve --requests 0", "--requests"}, BadInput{"serve --rate -2", "--rate"},
        BadInput{"serve --input-dist zipf:3", "unknown distribution"},
        BadInput{"serve --output-dist fixed:0", "token counts"},
        BadInput{"serve --arrival weibull", "poisson"},
        BadInput{"serve --max-num-seqs 0", "--max-num-seqs"},
        BadInput{"serve --block-size 0", "--block-size"},
        BadInput{"serve --trace /nonexistent/trace.jsonl", "does not exist"},
        BadInput{"serve --speculative k=4", "draft=MODEL"},
        BadInput{"serve --speculative draft=llama-3.2-1b,k=40,accept=0.5", "[1, 16]"},
        BadInput{"serve --speculative draft=llama-9b,k=2,accept=0.5", "known: "},
        BadInput{"serve --speculative ngram,k=4,accept=0.5,propose=5", "propose must be in (0, k]"},
        BadInput{"generate --model llama-3.2-1b --speculative ngram,k=4,propose=2 --prompt hi",
                 "propose="},
        BadInput{"serve --shared-prefix groups=3", "tokens=N"},
        BadInput{"serve --slo ttft_p99=-5,tpot_p99=5", "positive time"},
        BadInput{"serve --requests-csv /nonexistent-dir/r.csv --requests 3", "cannot write"},
        BadInput{"capacity --tp 1", "--slo"}, BadInput{"capacity --slo ttft_p99=100", "both"},
        BadInput{"capacity --slo ttft_p99=100,tpot_p99=10 --tp 0", "--tp"},
        BadInput{"capacity --slo ttft_p99=100,tpot_p99=10 --price h200=3", "not in --hardware"},
        BadInput{"capacity --slo ttft_p99=100,tpot_p99=10 --price h100-sxm=free", "USD"},
        BadInput{"capacity --slo ttft_p99=100,tpot_p99=10 --hardware h900", "known: "},
        // Library errors name request fields; the CLI shows the flags that set them.
        BadInput{"predict --batch 1000000 --input 1000000", "--batch x (--input + --output)"},
        BadInput{"sweep --weights fp4", "--weights fp4 is not supported"},
        BadInput{"serve --arrival gamma:0", "--arrival gamma:CV"},
        BadInput{"serve --shared-prefix tokens=10,colour=red", "--shared-prefix colour"},
        BadInput{"serve --input-dist fixed:x", "--input-dist fixed:x: 'x' is not a number"},
        BadInput{"explore --vary cores=-1", "--vary cores=-1: needs a positive number"},
        BadInput{"explore --vary cores=1 --workload decode:speed=3", "--workload: unknown key"}),
    [](const ::testing::TestParamInfo<BadInput>& info) {
      return "case" + std::to_string(info.index);
    });

class CliBadFiles : public ::testing::Test {
 protected:
  // One folder per process: ctest runs tests in parallel processes.
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("inferlab_cli_files_" + std::to_string(::getpid()));
  void SetUp() override { std::filesystem::create_directories(dir); }
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
};

TEST_F(CliBadFiles, MalformedTruncatedAndWronglyTypedConfigs) {
  struct Case {
    std::string text, expect;
  } cases[] = {
      {"{\"hidden_size\": 4096, ", "not valid JSON"},
      {"not json at all", "not valid JSON"},
      {"[1, 2, 3]", "expected a JSON object"},
      {"{\"hidden_size\": \"big\", \"intermediate_size\": 1, \"num_hidden_layers\": 1, "
       "\"num_attention_heads\": 1, \"vocab_size\": 1}",
       "must be a whole number"},
      {"{\"hidden_size\": 64, \"intermediate_size\": 128, \"num_hidden_layers\": 2, "
       "\"num_attention_heads\": 4, \"vocab_size\": 100, \"num_key_value_heads\": -2}",
       "out of range"},
  };
  int i = 0;
  for (const auto& c : cases) {
    auto path = write("config" + std::to_string(i++) + ".json", c.text);
    auto r = run_inferlab("predict --model " + path);
    EXPECT_EQ(r.exit_code, 2) << c.text;
    EXPECT_TRUE(r.out.empty());
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << r.err;
  }
}

TEST_F(CliBadFiles, AreaOfATemplateFileWithBadParts) {
  // A variant file of the shipped H100 with a process node and a link nobody has tables for.
  auto node = write("n3.json",
                    "{\"base\": \"h100-sxm\", \"name\": \"x\", \"display_name\": \"x\", "
                    "\"process_node\": \"N3\"}");
  auto r = run_inferlab("area --hardware " + node);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown process node 'N3'; known: N16, N7"), std::string::npos) << r.err;
  auto link = write("link.json",
                    "{\"base\": \"h100-sxm\", \"name\": \"y\", \"display_name\": \"y\", "
                    "\"node\": {\"link_kind\": \"smoke-signals\"}}");
  r = run_inferlab("area --hardware " + link);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown link kind"), std::string::npos) << r.err;
  auto truncated = write("cut.json", "{\"base\": \"h100-sxm\", \"name\": ");
  r = run_inferlab("area --hardware " + truncated);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("inferlab: error: "), std::string::npos) << r.err;
  // A trace with a bad line is named by line.
  auto trace = write("t.jsonl",
                     "{\"arrival_s\": 0, \"prompt_tokens\": 8, \"output_tokens\": 2}\n"
                     "{\"arrival_s\": \"soon\"}\n");
  r = run_inferlab("serve --model llama-3.2-1b --trace " + trace);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("line 2"), std::string::npos) << r.err;
}

TEST_F(CliBadFiles, ACustomConfigPathWorks) {
  auto path = write("tiny.json",
                    "{\"hidden_size\": 256, \"intermediate_size\": 1024, "
                    "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                    "\"num_key_value_heads\": 2, \"vocab_size\": 1000}");
  auto j = run_json("predict --model " + path + " --input 16 --output 4");
  EXPECT_EQ(j["model"], "tiny");
  EXPECT_GT(j["e2e_ms"].get<double>(), 0.0);
}

TEST(Cli, RooflineWritesAnSvgWithTheModelsOperators) {
  auto path = (std::filesystem::temp_directory_path() /
               ("inferlab_roofline_" + std::to_string(::getpid()) + ".svg"))
                  .string();
  auto j = run_json("roofline --hardware h100-sxm --out " + path +
                    " --model llama-3-8b --batch 1 --input 512");
  EXPECT_EQ(j["hardware"], "h100-sxm");
  EXPECT_NE(j["hardware_source"].get<std::string>().find("measured profile"), std::string::npos);
  EXPECT_GE(j["ceilings"].size(), 6u);
  EXPECT_GE(j["points"].size(), 10u);
  std::ifstream in(path);
  std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(svg.find("hbm read"), std::string::npos);
  EXPECT_NE(svg.find("prefill"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(Cli, ProfileChoiceIsReported) {
  auto measured = run_json("predict --hardware h100-sxm");
  auto sheet = run_json("predict --hardware h100-sxm --profile none");
  EXPECT_NE(measured["hardware_source"].get<std::string>().find("data/profiles/h100-sxm.json"),
            std::string::npos);
  EXPECT_EQ(sheet["hardware_source"], "spec sheet");
  EXPECT_EQ(run_json("predict --hardware a100-80g")["hardware_source"], "spec sheet");
}

TEST(Cli, FitFromTheShippedProfileReproducesTheShippedFactors) {
  auto j = run_json("fit --hardware h100-sxm --data " + inferlab::testing::test_data_dir() +
                    "/../validation/data/torch_reference_h100_2026-11-22.json");
  std::ifstream in(inferlab::testing::test_data_dir() + "/delay_factors/h100-sxm.json");
  nlohmann::json shipped = nlohmann::json::parse(in);
  for (const char* cls : {"gemm", "gemv", "attention", "norm", "elementwise", "softmax"}) {
    EXPECT_NEAR(j["factors"][cls].get<double>(), shipped["factors"][cls].get<double>(), 1e-9)
        << cls;
  }
  EXPECT_GT(j["fit"]["gemm"]["points"].get<int>(), 300);  // the probe's GEMM sweep is in it
}

// The held-out split: only operators marked "holdout" by the measuring script, plus the steps
// (never fitted); the fit split has the rest and no steps.
TEST(Cli, ValidateSplitsHeldOutCases) {
  std::string data = inferlab::testing::test_data_dir() +
                     "/../validation/data/torch_reference_h100_2026-11-22b.json";
  auto held = run_json("validate --cost calibrated --split holdout --data " + data);
  auto fitted = run_json("validate --cost calibrated --split fit --data " + data);
  auto all = run_json("validate --cost calibrated --data " + data);
  EXPECT_EQ(held["cost_model"], "calibrated");
  EXPECT_EQ(held["cases"].size() + fitted["cases"].size(), all["cases"].size());
  EXPECT_TRUE(held["groups"].contains("decode_graph"));
  EXPECT_FALSE(fitted["groups"].contains("decode_graph"));
  for (const auto& c : held["cases"]) {
    EXPECT_EQ(c["case"].get<std::string>().find("llama-3.2-1b q"), std::string::npos);
  }
}

TEST(Cli, ValidateFailsWithExitOneBelowItsBounds) {
  std::string data = inferlab::testing::test_data_dir() +
                     "/../validation/data/torch_reference_h100_2026-11-22.json";
  auto ok = run_inferlab("validate --data " + data + " --max-mape decode_graph=0.5");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  auto tight = run_inferlab("validate --data " + data + " --max-mape decode_graph=0.001");
  EXPECT_EQ(tight.exit_code, 1);
  EXPECT_NE(tight.err.find("decode_graph"), std::string::npos);
  auto j = run_json("validate --data " + data);
  EXPECT_EQ(j["cases"].size(), 244u + 30u);  // every operator, every step in both modes
  auto unknown = run_inferlab("validate --data " + data + " --max-mape warp=0.1");
  EXPECT_EQ(unknown.exit_code, 2);
}

TEST(Cli, ProbeWithoutAGpuSaysSo) {
  if (visible_gpu_count() > 0) GTEST_SKIP() << "a GPU is visible: the probe would run";
  auto r = run_inferlab("probe --out " +
                        (std::filesystem::temp_directory_path() / "inferlab_probe.json").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty());
  EXPECT_EQ(r.err.rfind("inferlab: error: ", 0), 0u);
  EXPECT_NE(r.err.find("GPU"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace inferlab
