#include "predict/validity.hpp"

#include <gtest/gtest.h>

#include "predict/options.hpp"

namespace inferlab {
namespace {

std::vector<std::string> notes_for(const std::string& model, const std::string& gpu,
                                   PredictOptions options, const std::string& cost = "calibrated") {
  HardwareSpec hw = load_hardware(gpu);
  return unvalidated_paths(load_model(model), options, resolve_precision(options, hw), hw, cost);
}

TEST(Validity, MeasuredPathHasNoNote) {
  PredictOptions plain_pytorch;
  plain_pytorch.framework = Framework::pytorch;
  EXPECT_TRUE(notes_for("llama-3-8b", "h100-sxm", plain_pytorch).empty());
  EXPECT_TRUE(notes_for("llama-3.2-1b", "h200", plain_pytorch).empty());
}

TEST(Validity, DefaultVllmKernelListIsFlagged) {
  auto notes = notes_for("llama-3.2-1b", "h100-sxm", PredictOptions{});
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("vLLM run"), std::string::npos);
}

TEST(Validity, EachUnmeasuredChoiceAddsOneNote) {
  PredictOptions o;
  o.framework = Framework::pytorch;
  o.weights = DType::int4;
  o.tp = 2;
  o.flash_attention = false;
  // A100: no step measured; Mixtral: MoE; int4 weights; TP 2; unfused attention.
  auto notes = notes_for("mixtral-8x7b", "a100-80g", o, "roofline");
  ASSERT_EQ(notes.size(), 5u);
  EXPECT_NE(notes[0].find("no step was measured on a100-80g"), std::string::npos) << notes[0];
  EXPECT_NE(notes[1].find("mixture of experts"), std::string::npos) << notes[1];
  EXPECT_NE(notes[2].find("weights int4"), std::string::npos) << notes[2];
  EXPECT_NE(notes[3].find("tensor parallelism"), std::string::npos) << notes[3];
  EXPECT_NE(notes[4].find("unfused attention"), std::string::npos) << notes[4];
}

TEST(Validity, RooflineOffTheH100IsFlagged) {
  PredictOptions o;
  o.framework = Framework::pytorch;
  auto notes = notes_for("llama-3-8b", "h200", o, "roofline");
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "the roofline model was checked on the H100 only");
}

}  // namespace
}  // namespace inferlab
