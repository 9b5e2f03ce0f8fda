#include "server/sse.hpp"

#include <gtest/gtest.h>

namespace inferlab::server {
namespace {

TEST(Sse, EventIsDataLineAndBlankLine) {
  EXPECT_EQ(sse_event(R"({"a":1})"), "data: {\"a\":1}\n\n");
  EXPECT_EQ(sse_event(kSseDone), "data: [DONE]\n\n");
}

TEST(Sse, ParserJoinsPiecesSplitAnywhere) {
  const std::string stream = sse_event("one") + ": comment\n\n" + sse_event("two") +
                             "data: three\r\ndata: lines\r\n\r\n" + sse_event(kSseDone);
  // Every split point gives the same events.
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    SseParser parser;
    auto events = parser.feed(std::string_view(stream).substr(0, cut));
    auto rest = parser.feed(std::string_view(stream).substr(cut));
    events.insert(events.end(), rest.begin(), rest.end());
    ASSERT_EQ(events.size(), 4u) << "cut at " << cut;
    EXPECT_EQ(events[0], "one");
    EXPECT_EQ(events[1], "two");
    EXPECT_EQ(events[2], "three\nlines");
    EXPECT_EQ(events[3], "[DONE]");
  }
}

TEST(Sse, ParserRefusesEndlessLine) {
  SseParser parser(16);
  EXPECT_THROW(parser.feed(std::string(17, 'x')), std::runtime_error);
}

}  // namespace
}  // namespace inferlab::server
