// The engine-profile loader: the committed synthetic example loads, and every kind of bad input
// is an InputError that names the file and the field.
#include "fit/engine_profile.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "fit/engine_steps.hpp"
#include "test_support.hpp"
#include "util/error.hpp"
#include "util/json_file.hpp"

namespace inferlab {
namespace {

std::string example_path() {
  return (std::filesystem::path(testing::test_data_dir()).parent_path() / "tests" / "fit" / "data" /
          "engine_profile_synthetic.json")
      .string();
}

nlohmann::json example() {
  return read_json_file(example_path(), "test");
}

TEST(EngineProfile, LoadsTheSyntheticExample) {
  const EngineProfile p = load_engine_profile(example_path());
  EXPECT_EQ(p.model, "llama-3.2-1b");
  EXPECT_EQ(p.hardware, "h200");
  EXPECT_TRUE(p.switches.fusion);
  EXPECT_EQ(p.switches.weights, DType::int4);
  ASSERT_EQ(p.points.size(), 6u);
  // The bench's rule: every third point of the grid held out.
  for (size_t i = 0; i < p.points.size(); ++i) EXPECT_EQ(p.points[i].held_out, i % 3 == 2) << i;
  const EngineProfilePoint& decode = p.points[3];
  EXPECT_EQ(decode.phase, Phase::decode);
  EXPECT_EQ(decode.tokens, 1);
  EXPECT_EQ(decode.context, 512);
  EXPECT_EQ(decode.label(), "decode b1 ctx512");
  EXPECT_GT(decode.step_s, 0.0);
  EXPECT_EQ(decode.kernels.size(), 10u);  // fused: no silu_mul
  EXPECT_EQ(decode.kernels[1].kernel, "norm");
  EXPECT_EQ(decode.kernels[1].launches, 1);
  EXPECT_NEAR(decode.kernel_seconds(), 0.0, 1.0);
}

// The context the passes ran at: decode points' passes each run a token further (one warmup
// pass, then `repeats` timed ones, then the profiled one), so a file without `profiled_context`
// is read as context + 1 + repeats; a prefill ran at its own; the field wins where given.
TEST(EngineProfile, PassContextIsWhereTheDecodePassesRan) {
  const EngineProfile p = load_engine_profile(example_path());
  EXPECT_EQ(p.points[0].pass_context, 128);       // prefill 1 x 128
  EXPECT_EQ(p.points[3].pass_context, 512 + 6);   // decode at 512, 5 repeats
  EXPECT_EQ(p.points[4].pass_context, 1024 + 6);  // decode at 1024: in the 2048 bucket
  EXPECT_EQ(engine_point_shape(p.points[4]).context, 1030);
  nlohmann::json doc = example();
  doc["points"][4]["profiled_context"] = 1027;
  doc["points"][5].erase("repeats");
  const EngineProfile given = parse_engine_profile(doc, "given.json");
  EXPECT_EQ(given.points[4].pass_context, 1027);
  EXPECT_EQ(given.points[5].pass_context, 1024);  // no repeats: nothing to add
  // A point built in code has none: the shape takes its context.
  EngineProfilePoint built;
  built.phase = Phase::decode;
  built.context = 4096;
  EXPECT_EQ(engine_point_shape(built).context, 4096);
}

TEST(EngineProfile, SwitchesRoundTrip) {
  const EngineProfile p = load_engine_profile(example_path());
  EXPECT_EQ(parse_engine_switches(engine_switches_json(p.switches), "x"), p.switches);
  EXPECT_EQ(engine_switches_label(p.switches),
            "gemv=on fusion=on graphs=on attention=flash weights=int4 kv=bf16 activations=bf16");
  const PredictOptions o = predict_options_for(p.switches);
  EXPECT_EQ(o.framework, Framework::inferlab);
  EXPECT_TRUE(o.fusion);
  EXPECT_EQ(o.weights, DType::int4);
  EXPECT_EQ(o.tp, 1);  // a profile without "tp": one GPU
  EXPECT_FALSE(engine_switches_json(p.switches).contains("tp"));
  // A profile without "rope" was taken before the RoPE epilogue: RoPE ran as its own kernel.
  EXPECT_FALSE(p.switches.rope_in_qkv);
  EXPECT_FALSE(o.rope_in_qkv);
  EXPECT_EQ(engine_switches_json(p.switches)["rope"], "kernel");
  // Nor "decode_cache": the flash decode read the cache after its grid wait.
  EXPECT_FALSE(p.switches.early_cache_reads);
  EXPECT_FALSE(o.early_cache_reads);
  EXPECT_EQ(engine_switches_json(p.switches)["decode_cache"], "after_wait");
}

// "rope": "qkv_epilogue" (what today's engine writes) round-trips, is named in the label and
// reaches the prediction.
TEST(EngineProfile, RopeEpilogueSwitch) {
  EngineSwitches s;
  EXPECT_TRUE(s.rope_in_qkv);  // the engine's default
  const nlohmann::json json = engine_switches_json(s);
  EXPECT_EQ(json["rope"], "qkv_epilogue");
  EXPECT_EQ(parse_engine_switches(json, "x"), s);
  EXPECT_EQ(engine_switches_label(s),
            "gemv=on fusion=on graphs=on attention=flash weights=bf16 kv=bf16 activations=bf16 "
            "rope=qkv cache=early");
  EXPECT_TRUE(predict_options_for(s).rope_in_qkv);
  nlohmann::json kernel = json;
  kernel["rope"] = "kernel";
  EXPECT_FALSE(parse_engine_switches(kernel, "x").rope_in_qkv);
}

// "decode_cache": "early" (today's engine: the streamed flash decode reads earlier passes' cache
// rows before its grid wait) round-trips, is named in the label and reaches the prediction;
// "after_wait" is the engine before it.
TEST(EngineProfile, EarlyCacheReadsSwitch) {
  EngineSwitches s;
  EXPECT_TRUE(s.early_cache_reads);  // the engine's default
  const nlohmann::json json = engine_switches_json(s);
  EXPECT_EQ(json["decode_cache"], "early");
  EXPECT_EQ(parse_engine_switches(json, "x"), s);
  EXPECT_TRUE(predict_options_for(s).early_cache_reads);
  nlohmann::json after = json;
  after["decode_cache"] = "after_wait";
  const EngineSwitches late = parse_engine_switches(after, "x");
  EXPECT_FALSE(late.early_cache_reads);
  EXPECT_FALSE(predict_options_for(late).early_cache_reads);
  EXPECT_EQ(engine_switches_label(late),
            "gemv=on fusion=on graphs=on attention=flash weights=bf16 kv=bf16 activations=bf16 "
            "rope=qkv");
}

// A tensor-parallel profile's "tp" round-trips, names its switch combination and sets the
// prediction's degree (so that its steps are fitted at the rank's shapes).
TEST(EngineProfile, TensorParallelSwitch) {
  EngineSwitches two;
  two.tp = 2;
  const nlohmann::json json = engine_switches_json(two);
  EXPECT_EQ(json["tp"], 2);
  EXPECT_EQ(parse_engine_switches(json, "x"), two);
  EXPECT_EQ(engine_switches_label(two),
            "gemv=on fusion=on graphs=on attention=flash weights=bf16 kv=bf16 activations=bf16 "
            "tp=2 rope=qkv cache=early");
  EXPECT_EQ(predict_options_for(two).tp, 2);
}

struct BadCase {
  const char* what;  // what the message must say: parts separated by '|', each required
  std::function<void(nlohmann::json&)> spoil;
};

std::vector<std::string> parts(const std::string& what) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t bar; (bar = what.find('|', start)) != std::string::npos; start = bar + 1) {
    out.push_back(what.substr(start, bar - start));
  }
  out.push_back(what.substr(start));
  return out;
}

TEST(EngineProfile, EachBadFieldIsAnInputErrorNamingTheFileAndField) {
  auto point = [](nlohmann::json& j) -> nlohmann::json& { return j["points"][1]; };
  auto kernel = [&](nlohmann::json& j) -> nlohmann::json& { return point(j)["kernels"][2]; };
  const std::vector<BadCase> cases = {
      {"expected a JSON object", [](auto& j) { j = nlohmann::json::array(); }},
      {"'kind'", [](auto& j) { j["kind"] = "engine_bench"; }},
      {"'model'", [](auto& j) { j.erase("model"); }},
      {"'model'", [](auto& j) { j["model"] = ""; }},
      {"'hardware'", [](auto& j) { j["hardware"] = 3; }},
      {"'device_name'", [](auto& j) { j["device_name"] = 3; }},
      {"'switches'", [](auto& j) { j.erase("switches"); }},
      {"switches: missing 'fusion'", [](auto& j) { j["switches"].erase("fusion"); }},
      {"unknown switch 'speculative'", [](auto& j) { j["switches"]["speculative"] = "on"; }},
      {"switches.weights is 'int3'", [](auto& j) { j["switches"]["weights"] = "int3"; }},
      {"switches.gemv is 'yes'", [](auto& j) { j["switches"]["gemv"] = "yes"; }},
      {"switches.attention", [](auto& j) { j["switches"]["attention"] = true; }},
      {"switches.activations int8 needs weights int8",
       [](auto& j) { j["switches"]["activations"] = "int8"; }},
      {"switches.tp must be an integer in [1, 64]", [](auto& j) { j["switches"]["tp"] = 0; }},
      {"switches.tp must be an integer in [1, 64]", [](auto& j) { j["switches"]["tp"] = "2"; }},
      {"switches.tp must be an integer in [1, 64]", [](auto& j) { j["switches"]["tp"] = 65; }},
      {"switches.rope is 'on'", [](auto& j) { j["switches"]["rope"] = "on"; }},
      {"switches.rope must be a string", [](auto& j) { j["switches"]["rope"] = true; }},
      {"switches.decode_cache is 'soon'|known: early, after_wait",
       [](auto& j) { j["switches"]["decode_cache"] = "soon"; }},
      {"switches.decode_cache must be a string",
       [](auto& j) { j["switches"]["decode_cache"] = 1; }},
      {"'points'", [](auto& j) { j["points"] = nlohmann::json::array(); }},
      {"'points'", [](auto& j) { j.erase("points"); }},
      {"points[1]: field 'phase'", [&](auto& j) { point(j)["phase"] = "verify"; }},
      {"points[1]: field 'batch'", [&](auto& j) { point(j)["batch"] = 0; }},
      {"points[1]: field 'batch'", [&](auto& j) { point(j)["batch"] = 1.5; }},
      {"points[1]|'tokens'", [&](auto& j) { point(j).erase("tokens"); }},
      {"points[3]: field 'tokens' of a decode point must be 1",
       [](auto& j) { j["points"][3]["tokens"] = 4; }},
      {"points[1]: field 'context'", [&](auto& j) { point(j)["context"] = 100; }},
      {"points[1]: field 'split'", [&](auto& j) { point(j)["split"] = "test"; }},
      {"points[1]|'split'", [&](auto& j) { point(j).erase("split"); }},
      {"points[1]: field 'step_ms'", [&](auto& j) { point(j)["step_ms"] = -1.0; }},
      {"points[1]: field 'step_ms'", [&](auto& j) { point(j)["step_ms"] = "fast"; }},
      {"points[1]: field 'step_ms'", [&](auto& j) { point(j)["step_ms"] = 0.0; }},
      {"points[1]: fields 'step_min_ms'", [&](auto& j) { point(j)["step_min_ms"] = 1e6; }},
      {"points[1]: field 'repeats'", [&](auto& j) { point(j)["repeats"] = 0; }},
      // The profiled pass never runs before the point's own context.
      {"points[3]: field 'profiled_context'",
       [](auto& j) { j["points"][3]["profiled_context"] = 511; }},
      {"points[3]: field 'profiled_context'",
       [](auto& j) { j["points"][3]["profiled_context"] = "later"; }},
      {"points[1]: missing array 'kernels'", [&](auto& j) { point(j).erase("kernels"); }},
      {"points[1]: missing array 'kernels'", [&](auto& j) { point(j)["kernels"] = 1; }},
      {"points[1].kernels[2]: field 'kernel' is 'matmul'",
       [&](auto& j) { kernel(j)["kernel"] = "matmul"; }},
      {"points[1].kernels[2]: field 'ms'", [&](auto& j) { kernel(j)["ms"] = -0.1; }},
      {"points[1].kernels[2]|'ms'", [&](auto& j) { kernel(j).erase("ms"); }},
      {"points[1].kernels[2]: field 'bytes'", [&](auto& j) { kernel(j)["bytes"] = -1; }},
      {"points[1].kernels[2]|'flops'", [&](auto& j) { kernel(j)["flops"] = nullptr; }},
      {"points[1].kernels[2]: field 'launches'", [&](auto& j) { kernel(j)["launches"] = 2.5; }},
      {"points[1].kernels[2]: field 'launches'", [&](auto& j) { kernel(j)["launches"] = -1; }},
      {"points[1].kernels[2]: kernel class 'norm' appears twice",
       [&](auto& j) { kernel(j)["kernel"] = "norm"; }},
      {"points[1].kernels[2]: expected an object", [&](auto& j) { kernel(j) = "gemm_qkv"; }},
  };
  for (const auto& c : cases) {
    nlohmann::json doc = example();
    c.spoil(doc);
    try {
      parse_engine_profile(doc, "bad.json");
      ADD_FAILURE() << "accepted: " << c.what;
    } catch (const InputError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("'bad.json'"), std::string::npos) << message;
      for (const auto& part : parts(c.what)) {
        EXPECT_NE(message.find(part), std::string::npos)
            << "wanted '" << part << "' in: " << message;
      }
    }
  }
}

// A bench run of a config or checkpoint folder writes the path it was given; the reader finds a
// relative one from the working folder, or from the profile's folder or one above it.
TEST(EngineProfile, AConfigPathModelIsFoundFromTheProfilesFolder) {
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() / "inferlab_profile_model";
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "configs");
  std::filesystem::create_directories(root / "checkpoint");
  std::filesystem::create_directories(root / "validation" / "data");
  std::ofstream(root / "configs" / "tiny.json") << "{}";
  std::ofstream(root / "checkpoint" / "config.json") << "{}";
  std::filesystem::create_directories(root / "llama-3-8b");  // a folder without config.json
  EXPECT_EQ(profile_model_field("llama-3.2-1b", "llama-3.2-1b"), "llama-3.2-1b");
  EXPECT_EQ(profile_model_field("configs/tiny.json", "tiny"), "configs/tiny.json");
  EXPECT_EQ(profile_model_field((root / "checkpoint").string(), "checkpoint"),
            (root / "checkpoint" / "config.json").string());
  EXPECT_EQ(profile_model_field((root / "llama-3-8b").string(), "llama-3-8b"),
            (root / "llama-3-8b").string());  // path-like: as given, not a checkpoint's config

  const std::string profile = (root / "validation" / "data" / "p.json").string();
  // Two folders above the profile: the repository's root of a run from there.
  EXPECT_EQ(resolve_profile_model("configs/tiny.json", profile),
            (root / "configs" / "tiny.json").string());
  EXPECT_EQ(resolve_profile_model("llama-3-8b", profile), "llama-3-8b");  // a shipped name
  EXPECT_EQ(resolve_profile_model("configs/absent.json", profile), "configs/absent.json");
  const std::string absolute = (root / "configs" / "tiny.json").string();
  EXPECT_EQ(resolve_profile_model(absolute, profile), absolute);
  // Through the loader: the example with its model field set to the relative path.
  nlohmann::json doc = example();
  doc["model"] = "configs/tiny.json";
  EXPECT_EQ(parse_engine_profile(doc, profile).model, (root / "configs" / "tiny.json").string());
  std::filesystem::remove_all(root);
}

TEST(EngineProfile, UnreadableFilesAreInputErrors) {
  const auto dir = std::filesystem::temp_directory_path() / "inferlab_engine_profile_test";
  std::filesystem::create_directories(dir);
  const auto broken = (dir / "broken.json").string();
  std::ofstream(broken) << "{\"kind\": \"engine_profile\",";
  for (const std::string& path : {broken, (dir / "missing.json").string()}) {
    try {
      load_engine_profile(path);
      ADD_FAILURE() << path;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(load_engine_profiles({}), InputError);
}

TEST(EngineProfile, ProfilesOfTwoHardwareAreRefusedForOneFit) {
  EngineProfile a, b;
  a.path = "a.json", a.hardware = "h200";
  b.path = "b.json", b.hardware = "h100-sxm";
  EXPECT_EQ(common_hardware({a, a}), "h200");
  try {
    common_hardware({a, b});
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("b.json"), std::string::npos);
  }
}

}  // namespace
}  // namespace inferlab
