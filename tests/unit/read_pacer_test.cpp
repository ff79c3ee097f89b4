// The rendezvous READ window: halved by a READ that took a retransmission timeout,
// grown back by one after a window's worth of fast READs, never above the depth.
#include "engine/read_pacer.h"

#include <gtest/gtest.h>

namespace {

using rdmx::engine::ReadPacer;

constexpr uint64_t kTimeout = 500'000'000;  // 0.5 s, rxe's usual local ACK timeout

// Posts n READs at t and completes them at t + took; returns the window after.
uint32_t round_trip(ReadPacer& p, uint32_t n, uint64_t& t, uint64_t took) {
  for (uint32_t i = 0; i < n; ++i) p.posted(t);
  t += took;
  for (uint32_t i = 0; i < n; ++i) p.completed(t);
  return p.window();
}

TEST(ReadPacer, WithoutATimeoutTheWindowIsTheDepth) {
  ReadPacer p;
  p.reset(16, 0);
  for (int i = 0; i < 100; ++i) {
    p.posted();
    EXPECT_FALSE(p.completed());
  }
  EXPECT_EQ(p.window(), 16u);
  EXPECT_EQ(p.depth(), 16u);
}

TEST(ReadPacer, ASlowReadHalvesTheWindowDownToOne) {
  ReadPacer p;
  p.reset(16, kTimeout);
  uint64_t t = 1000;
  p.posted(t);
  EXPECT_TRUE(p.completed(t + kTimeout));
  EXPECT_EQ(p.window(), 8u);
  for (uint32_t want : {4u, 2u, 1u, 1u}) {
    t += kTimeout;
    p.posted(t);
    EXPECT_TRUE(p.completed(t + kTimeout));
    EXPECT_EQ(p.window(), want);
  }
}

TEST(ReadPacer, FastReadsGrowTheWindowBackToTheDepthAndNoFurther) {
  ReadPacer p;
  p.reset(8, kTimeout);
  uint64_t t = 0;
  round_trip(p, 1, t, kTimeout);  // 8 -> 4
  round_trip(p, 1, t, kTimeout);  // 4 -> 2
  ASSERT_EQ(p.window(), 2u);
  // A window's worth of fast READs adds one.
  EXPECT_EQ(round_trip(p, 2, t, 1'000'000), 3u);
  EXPECT_EQ(round_trip(p, 3, t, 1'000'000), 4u);
  for (int i = 0; i < 50; ++i) round_trip(p, p.window(), t, 1'000'000);
  EXPECT_EQ(p.window(), 8u);
}

TEST(ReadPacer, CompletionsTakeTheOldestPostTime) {
  ReadPacer p;
  p.reset(4, kTimeout);
  p.posted(0);
  p.posted(kTimeout - 10);
  // The first READ, posted at 0, is slow at kTimeout; the second is not.
  EXPECT_TRUE(p.completed(kTimeout));
  EXPECT_FALSE(p.completed(kTimeout));
  EXPECT_EQ(p.window(), 2u);
}

TEST(ReadPacer, AFailedLinkForgetsItsReadsInFlight) {
  ReadPacer p;
  p.reset(4, kTimeout);
  p.posted(0);
  p.posted(0);
  p.forget();
  EXPECT_FALSE(p.completed(10 * kTimeout)) << "no READ is in flight after forget()";
  EXPECT_EQ(p.window(), 4u);
}

TEST(ReadPacer, TheRingWrapsAtTheDepth) {
  ReadPacer p;
  p.reset(3, kTimeout);  // a ring of 4
  uint64_t t = 0;
  for (int i = 0; i < 1000; ++i) {
    p.posted(t);
    p.posted(t);
    p.posted(t);
    t += 1000;
    EXPECT_FALSE(p.completed(t));
    EXPECT_FALSE(p.completed(t));
    EXPECT_FALSE(p.completed(t));
  }
  EXPECT_EQ(p.window(), 3u);
}

}  // namespace
