// The matching queues on their own: wildcard classes, post order, negative tags, and
// that lookups do not depend on how many entries wait.
#include <gtest/gtest.h>

#include <vector>

#include "match/posted_queue.h"
#include "match/unexpected_queue.h"

namespace rdmx {
namespace {

TEST(PostedQueue, OldestMatchingReceiveWinsAcrossWildcardClasses) {
  PostedQueue q;
  PostedEntry any_any, exact, any_src, any_tag;
  q.post(any_tag, 0, 1, RDMX_ANY_TAG);
  q.post(exact, 0, 1, 5);
  q.post(any_src, 0, RDMX_ANY_SOURCE, 5);
  q.post(any_any, 0, RDMX_ANY_SOURCE, RDMX_ANY_TAG);
  EXPECT_EQ(q.match(0, 1, 5), &any_tag);
  EXPECT_EQ(q.match(0, 1, 5), &exact);
  EXPECT_EQ(q.match(0, 2, 5), &any_src);
  EXPECT_EQ(q.match(1, 2, 5), nullptr);  // another context
  EXPECT_EQ(q.match(0, 2, 9), &any_any);
  EXPECT_EQ(q.size(), 0u);
}

TEST(PostedQueue, AnyTagNeverMatchesNegativeTags) {
  PostedQueue q;
  PostedEntry a, b;
  q.post(a, 3, 1, RDMX_ANY_TAG);
  q.post(b, 3, RDMX_ANY_SOURCE, RDMX_ANY_TAG);
  EXPECT_EQ(q.match(3, 1, -7), nullptr);
  PostedEntry c;
  q.post(c, 3, RDMX_ANY_SOURCE, -7);
  EXPECT_EQ(q.match(3, 1, -7), &c);
  EXPECT_TRUE(q.remove(a));
  EXPECT_FALSE(q.remove(a));
}

TEST(UnexpectedQueue, FindsTheOldestForEveryReceiveShape) {
  UnexpectedQueue q;
  std::vector<UnexpectedEntry> m(5);
  q.add(m[0], 0, 1, -2);
  q.add(m[1], 0, 2, 4);
  q.add(m[2], 0, 1, 4);
  q.add(m[3], 0, 1, 6);
  q.add(m[4], 1, 1, 4);
  EXPECT_EQ(q.find(0, 1, RDMX_ANY_TAG), &m[2]);  // skips the negative tag
  EXPECT_EQ(q.find(0, RDMX_ANY_SOURCE, 4), &m[1]);
  EXPECT_EQ(q.find(0, RDMX_ANY_SOURCE, RDMX_ANY_TAG), &m[1]);
  EXPECT_EQ(q.find(0, 1, -2), &m[0]);
  EXPECT_EQ(q.find(1, RDMX_ANY_SOURCE, RDMX_ANY_TAG), &m[4]);
  q.remove(m[1]);
  EXPECT_EQ(q.find(0, RDMX_ANY_SOURCE, 4), &m[2]);
  EXPECT_EQ(q.find(0, RDMX_ANY_SOURCE, RDMX_ANY_TAG), &m[2]);
  EXPECT_EQ(q.size(), 4u);
}

TEST(PostedQueue, ExactLookupCostDoesNotGrowWithPendingReceives) {
  // 10,000 receives on distinct tags; every match touches one bucket.
  PostedQueue q;
  std::vector<PostedEntry> e(10000);
  for (int i = 0; i < 10000; ++i) q.post(e[size_t(i)], 0, 1, i);
  for (int i = 9999; i >= 0; --i) ASSERT_EQ(q.match(0, 1, i), &e[size_t(i)]);
  EXPECT_EQ(q.size(), 0u);
}

}  // namespace
}  // namespace rdmx
