# The unit tests CI runs under ASan+UBSan (scripts/sanitize.sh, label `sanitize`): those of the
# parsers of untrusted input and of the engine's CPU path, tokenizer, serving simulator, fitting,
# and the server's request handling (tests/ util, hw, model, fit, serve, engine, server).
# What repeats the release run's long work at -O0 under ASan stays out (the release `ctest` runs
# it): serving_behaviour_test (it drives the CLI, which would compile the CLI and report modules
# a second time); the serving stress suite (230 to 600+ s a seed here); the OpenAiServer and
# Loadgen tests that generate for many requests (30 to 220 s each, nearly all of it the engine at
# -O0; the JSON errors of bad requests and the 401s stay); the tokenizers' linear-time checks
# (timing checks, 70 and 122 s); the engine fits over synthetic profiles (Nelder-Mead at -O0,
# 265-270 s each on 2026-11-27, 5-10 s in release); the OpenAiLogprobs tests that generate over
# HTTP with the Llama 3 tokenizer (28-63 s each under ASan on 2026-11-27, 1-2 s in release: the
# tokenizer's load and the engine at -O0; the executor's logprobs stay, in ServingLogprobs, and
# the bad logprobs requests' 400s). The cost, predict, area, explore, report,
# cli and probe tests and the GPU tests are not built here.
find_package(GTest REQUIRED)
include(GoogleTest)
file(GLOB INFERLAB_SANITIZE_TEST_SOURCES CONFIGURE_DEPENDS
     tests/util/*.cpp tests/hw/*.cpp tests/model/*.cpp tests/fit/*.cpp tests/serve/*.cpp
     tests/engine/*.cpp tests/server/*.cpp)
list(FILTER INFERLAB_SANITIZE_TEST_SOURCES EXCLUDE REGEX
     "serving_behaviour_test\\.cpp$|/serving_stress_[a-z]+\\.cpp$|/engine_failure_test\\.cpp$")
add_executable(inferlab_sanitize_tests ${INFERLAB_SANITIZE_TEST_SOURCES} tests/test_support.cpp)
target_include_directories(inferlab_sanitize_tests PRIVATE tests)
target_link_libraries(inferlab_sanitize_tests PRIVATE inferlab_fit inferlab_serve inferlab_engine
                                                      inferlab_server GTest::gtest GTest::gtest_main)
# As in tests/CMakeLists.txt (source properties are per folder, so set here too).
set_source_files_properties(tests/test_support.cpp PROPERTIES COMPILE_DEFINITIONS
  "INFERLAB_BINARY=\"$<TARGET_FILE:inferlab>\";INFERLAB_TEST_DATA_DIR=\"${CMAKE_SOURCE_DIR}/data\";INFERLAB_CMAKE_COMMAND=\"${CMAKE_COMMAND}\";INFERLAB_BUILD_DIR=\"${CMAKE_BINARY_DIR}\"")
gtest_discover_tests(inferlab_sanitize_tests TEST_PREFIX "sanitize." DISCOVERY_TIMEOUT 120
                     TEST_FILTER "-OpenAiServer.GreedyAnswersAreGeneratesAloneOrBatched:OpenAiServer.PreemptedBySwapTheAnswersStayGeneratesAlone:OpenAiServer.ChatStopStringsSeedsAndTokenPrompts:OpenAiServer.FullQueueIs429AndAGoneClientFreesItsBlocks:OpenAiServer.Speculation*:OpenAiServer.PrefixCachingReusesBlocksAndKeepsTheAnswer:OpenAiServerAuth.HttpsWithASelfSignedCertificate:OpenAiServerAuth.ProtectedMetricsNeedTheKeyToo:Loadgen.MeasuresEveryRequestOfALiveServer:Loadgen.BurstOfClientsIsServedWhole:Loadgen.SendsTheKeyOverHttps:Loadgen.FailuresAreCountedNotLost:TokenizerTiny.LongInputsTakeLinearTime:TokenizerLlama3.LongInputs:EngineFit.RecoversTheParametersOfSyntheticProfiles:EngineFit.NeverReadsAHeldOutPoint:EngineFit.PredictsTheHeldOutSyntheticStepsExactly:EngineFit.FittedFileReadsBack:EngineCosts.ClockGainOutsideItsRangeIsAnInputError:OpenAiLogprobs.NChoicesAreIndependentSamples:OpenAiLogprobs.EchoSkipsThePrefixCacheAndScoresTheWholePrompt:OpenAiLogprobs.EchoedPromptAndCompletionAreLogSoftmaxOfTheModelsRows:OpenAiLogprobs.MaxTokensZeroWithEchoScoresThePromptOnly:OpenAiLogprobs.StreamsCarryTheSameLogprobs:OpenAiLogprobs.ChatLogprobsHaveTheChatShape"
                     PROPERTIES LABELS sanitize)
