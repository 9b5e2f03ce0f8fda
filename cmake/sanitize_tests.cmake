# The unit tests CI runs under ASan+UBSan (scripts/sanitize.sh, label `sanitize`): those of the
# parsers and of the engine's CPU path, tokenizer, serving simulator, fitting and the HTTP server
# and load generator on the CPU path (tests/ util, hw, model, fit, serve, engine, server). Left out: serving_behaviour_test (it drives the CLI, so it needs the
# CLI and report modules compiled a second time), the cost, predict, area, explore, report, cli
# and probe tests, and the GPU tests. The whole suite still builds here
# (`ninja -C build-sanitize inferlab_tests`), but compiling it twice does not fit CI's time.
find_package(GTest REQUIRED)
include(GoogleTest)
file(GLOB INFERLAB_SANITIZE_TEST_SOURCES CONFIGURE_DEPENDS
     tests/util/*.cpp tests/hw/*.cpp tests/model/*.cpp tests/fit/*.cpp tests/serve/*.cpp
     tests/engine/*.cpp tests/server/*.cpp)
list(FILTER INFERLAB_SANITIZE_TEST_SOURCES EXCLUDE REGEX "serving_behaviour_test\\.cpp$")
add_executable(inferlab_sanitize_tests ${INFERLAB_SANITIZE_TEST_SOURCES} tests/test_support.cpp)
target_include_directories(inferlab_sanitize_tests PRIVATE tests)
target_link_libraries(inferlab_sanitize_tests PRIVATE inferlab_fit inferlab_serve inferlab_engine
                                                      inferlab_server GTest::gtest GTest::gtest_main)
# As in tests/CMakeLists.txt (source properties are per folder, so set here too).
set_source_files_properties(tests/test_support.cpp PROPERTIES COMPILE_DEFINITIONS
  "INFERLAB_BINARY=\"$<TARGET_FILE:inferlab>\";INFERLAB_TEST_DATA_DIR=\"${CMAKE_SOURCE_DIR}/data\";INFERLAB_CMAKE_COMMAND=\"${CMAKE_COMMAND}\";INFERLAB_BUILD_DIR=\"${CMAKE_BINARY_DIR}\"")
# Three server tests that mostly repeat the CPU engine's work (50, 34 and 29 s at -O0 under ASan)
# stay out, to keep CI under 25 minutes; the other server tests (threads, disconnects, the queue,
# prefix caching, the load generator) run here. So do four of the access and failure tests
# (about 25 s each, nearly all of it the Llama 3 tokenizer's load): the 401s, HTTPS and an engine
# failure's freed blocks run here; --protect-metrics, the two fatal failures and the load
# generator over HTTPS, which take the same paths again, do not.
gtest_discover_tests(inferlab_sanitize_tests TEST_PREFIX "sanitize." DISCOVERY_TIMEOUT 120
                     TEST_FILTER "-OpenAiServer.GreedyAnswersAreGeneratesAloneOrBatched:OpenAiServer.ChatStopStringsSeedsAndTokenPrompts:Loadgen.BurstOfClientsIsServedWhole:OpenAiServerAuth.ProtectedMetricsNeedTheKeyToo:OpenAiServerEngineFailure.AStickyCudaErrorStopsServing:OpenAiServerEngineFailure.FailuresInARowWithNothingRunningBetweenAreFatal:Loadgen.SendsTheKeyOverHttps"
                     PROPERTIES LABELS sanitize)
