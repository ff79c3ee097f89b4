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

// A 64-bit tag under an ignore mask: (cid << 32 | tag) compared on the bits not ignored.
TEST(PostedQueue, MaskedReceivesMatchInPostOrderWithTheOthers) {
  PostedQueue q;
  PostedEntry low_byte, exact, any_src_mask, other_src;
  // Ignores the low byte of the tag: matches (7, 1, 0x100..0x1ff).
  q.post_masked(low_byte, MatchKey::for_tagged(7, 1, 0x100, 0xff), 0xff);
  q.post(exact, MatchKey::for_tagged(7, 1, 0x105, 0));
  // Ignores the context id: any context, tag 0x105, any source.
  q.post_masked(any_src_mask, MatchKey::for_tagged(0, RDMX_ANY_SOURCE, 0x105, ~0ull << 32),
                ~0ull << 32);
  q.post_masked(other_src, MatchKey::for_tagged(7, 2, 0, ~0ull), ~0ull);
  EXPECT_EQ(q.match(7, 1, 0x105), &low_byte);  // the oldest of three candidates
  EXPECT_EQ(low_byte.key.tag(), 0x105);        // reports what matched
  EXPECT_EQ(q.match(7, 1, 0x105), &exact);
  EXPECT_EQ(q.match(7, 1, 0x206), nullptr);
  EXPECT_EQ(q.match(9, 3, 0x105), &any_src_mask);
  EXPECT_EQ(any_src_mask.key.cid(), 9u);
  EXPECT_EQ(q.match(7, 1, 0x105), nullptr);
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.take_source(2), std::vector<PostedEntry*>{&other_src});
  EXPECT_EQ(q.size(), 0u);
}

TEST(PostedQueue, TaggedReceivesTreatEveryTagAsExact) {
  PostedQueue q;
  PostedEntry min_tag, all_ones;
  q.post(min_tag, MatchKey::for_tagged(0, 1, RDMX_ANY_TAG, 0));
  q.post(all_ones, MatchKey::for_tagged(0, RDMX_ANY_SOURCE, -1, 0));
  EXPECT_EQ(q.match(0, 1, 5), nullptr);  // INT32_MIN is not ANY_TAG here
  EXPECT_EQ(q.match(0, 3, -1), &all_ones);
  EXPECT_EQ(q.match(0, 1, RDMX_ANY_TAG), &min_tag);
  PostedEntry masked;
  q.post_masked(masked, MatchKey::for_tagged(0, 1, 0, 1), 1);
  EXPECT_TRUE(q.remove(masked));
  EXPECT_FALSE(q.remove(masked));
  EXPECT_EQ(q.match(0, 1, 1), nullptr);
}

TEST(UnexpectedQueue, AMaskFindsTheOldestMessageItCovers) {
  UnexpectedQueue q;
  std::vector<UnexpectedEntry> m(4);
  q.add(m[0], 1, 2, 0x10);
  q.add(m[1], 2, 1, 0x11);
  q.add(m[2], 2, 1, RDMX_ANY_TAG);  // a tagged send's tag may be INT32_MIN
  q.add(m[3], 3, 1, 0x12);
  EXPECT_EQ(q.find(MatchKey::for_tagged(0, 1, 0x10, 0x3ull << 32 | 0x3), 0x3ull << 32 | 0x3),
            &m[1]);
  EXPECT_EQ(q.find(MatchKey::for_tagged(0, RDMX_ANY_SOURCE, 0, ~0ull), ~0ull), &m[0]);
  EXPECT_EQ(q.find(MatchKey::for_tagged(2, 1, RDMX_ANY_TAG, 0), 0), &m[2]);
  EXPECT_EQ(q.find(MatchKey::for_tagged(3, 2, 0x12, 0xff), 0xff), nullptr);  // source 1 only
  q.remove(m[1]);
  EXPECT_EQ(q.find(MatchKey::for_tagged(0, 1, 0, ~0ull), ~0ull), &m[2]);
  EXPECT_EQ(q.size(), 3u);
}

}  // namespace
}  // namespace rdmx
