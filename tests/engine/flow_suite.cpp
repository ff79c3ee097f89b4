// Credit flow control under a slow receiver, sends that must survive their sender's
// finalize, and a randomized stress across the protocol thresholds with wildcards,
// checked against MPI's matching rules.
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <thread>

#include "engine/engine_test.h"
#include "fabric/fabric.h"

namespace rdmx::test {
namespace {

TEST_P(EngineTest, CreditExhaustionWithSlowReceiver) {
  constexpr int kN = 500;
  // With a shared receive queue there are no credits: the fabric's RNR retry holds
  // the sender instead, and nothing may be lost or reordered either way. Where small
  // messages take no credit, the room in the fabric's queue holds it.
  bool credits = !caps().shared_receive;
  bool small_uncredited = caps().small_uncredited;
  run(
      2,
      [credits, small_uncredited](Rank& r) {
        if (r.rank == 0) {
          std::vector<uint32_t> v(kN);
          std::vector<rdmx_request_t*> q;
          for (int i = 0; i < kN; ++i) {
            v[size_t(i)] = uint32_t(i);
            q.push_back(isend(r, 1, i % 5, &v[size_t(i)], 4));
          }
          for (auto* x : q) EXPECT_EQ(r.finish(x).error, RDMX_OK);
          rdmx_stats_t s{};
          rdmx_get_stats(r.ctx, &s);
          if (credits) {
            EXPECT_GT(s.credit_stalls, 0u) << "the sender never ran out of credits (or room)";
          }
        } else {
          // Do not progress for a while: the sender must queue, not drop or overrun.
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
          for (int i = 0; i < kN; ++i) {
            uint32_t got = ~0u;
            auto st = r.finish(irecv(r, 0, RDMX_ANY_TAG, &got, 4));
            EXPECT_EQ(st.error, RDMX_OK);
            EXPECT_EQ(got, uint32_t(i)) << "reordered or lost";
            EXPECT_EQ(st.tag, i % 5);
          }
          rdmx_stats_t s{};
          rdmx_get_stats(r.ctx, &s);
          // Messages paced by the fabric's queue took no credit: none is owed back.
          if (credits && !small_uncredited) {
            EXPECT_GT(s.credit_messages, 0u) << "credits were never returned explicitly";
          } else if (small_uncredited) {
            EXPECT_EQ(s.credit_messages, 0u) << "credits returned for messages that took none";
          }
        }
      },
      SettingList{{"RDMX_CREDITS", "4"}});
}

// Without RDMX_CREDITS the fabric chooses each connection's credit window (32 through
// shared memory, 24 over libfabric tcp, 64 otherwise): that many sends go out before the
// receiver takes any, and the rest wait for its credits, in order. A shared receive
// queue has no credits: every send goes. Where small messages take no credit, the
// messages are larger than those.
TEST_P(EngineTest, TheFabricChoosesTheCreditWindow) {
  constexpr int kN = 80;
  const uint32_t window = caps().shared_receive ? uint32_t(kN) : caps().credit_window;
  const uint32_t bytes = caps().small_uncredited ? fabric::kUnbufferedMax + 4 : 4;
  run(2, [window, bytes](Rank& r) {
    uint32_t one = 0;
    if (r.rank == 1) {
      // The connection, opened by the receiver: the sender has spent none of its credits.
      EXPECT_EQ(r.finish(isend(r, 0, 1, &one, 4)).error, RDMX_OK);
      r.barrier();
      r.barrier();
      std::vector<uint32_t> got(bytes / 4);
      for (int i = 0; i < kN; ++i) {
        got[0] = ~0u;
        EXPECT_EQ(r.finish(irecv(r, 0, 2, got.data(), bytes)).error, RDMX_OK);
        EXPECT_EQ(got[0], uint32_t(i)) << "reordered or lost";
      }
    } else {
      EXPECT_EQ(r.finish(irecv(r, 1, 1, &one, 4)).error, RDMX_OK);
      r.barrier();
      // No progress between these sends: only the credits the receiver granted let any
      // of them go.
      std::vector<std::vector<uint32_t>> v(kN, std::vector<uint32_t>(bytes / 4));
      std::vector<rdmx_request_t*> q;
      uint32_t went = 0;
      for (int i = 0; i < kN; ++i) {
        v[size_t(i)][0] = uint32_t(i);
        rdmx_request_t* req = nullptr;
        ASSERT_EQ(rdmx_isend(r.ctx, 1, 0, 2, v[size_t(i)].data(), bytes,
                             RDMX_SEND_NO_REQUEST_IF_DONE, nullptr, nullptr, &req),
                  RDMX_OK);
        if (req)
          q.push_back(req);
        else
          ++went;
      }
      EXPECT_EQ(went, window) << "sends that went before the receiver returned any credit";
      r.barrier();
      for (auto* x : q) EXPECT_EQ(r.finish(x).error, RDMX_OK);
    }
  });
}

// Messages either side of the sizes that ride in a shared-memory queue entry (one slot:
// 16 bytes of payload, or 8 with control credits to return; six: 148, 124 for a
// synchronous send, which has the long header), interleaved with larger ones on one
// tag, some received as they come and the rest found unexpected, with 4 credits: each
// arrives whole and in order. Where the path carries small messages without a receive
// buffer, every small one went that way, and the credits they took came back all the
// same.
TEST_P(EngineTest, MessagesEitherSideOfTheInlineSizeKeepTheirOrder) {
  // Through shared memory a short message of up to 16 bytes of payload takes one slot;
  // otherwise a message's bytes (a 16-byte short header, or the 32-byte header and an
  // 8-byte sync tail, and the payload) take 24 bytes in an entry's first slot and 28 in
  // each after it: the sizes on either side of each slot's end, and of the largest
  // message carried without a buffer (fabric::kUnbufferedMax).
  constexpr uint64_t kShortMax = fabric::kUnbufferedMax - 16, kSyncMax = kShortMax - 24;
  // clang-format off
  static const std::vector<uint64_t> kSizes = {
      0,  1,  8,  9,  12,  13,  16,  17,  24,  25,  36,  37,
      64, 65, 92, 93, 100, 120, 121, kSyncMax, kSyncMax + 1, kShortMax, kShortMax + 1,
      3000};
  // clang-format on
  constexpr int kN = 250;
  constexpr uint64_t kMax = 3000;
  auto size_of = [](int i) { return kSizes[size_t(i) % kSizes.size()]; };
  auto sync_of = [](int i) { return i % 3 == 0; };
  uint64_t small = 0;
  for (int i = 0; i < kN; ++i) small += size_of(i) <= (sync_of(i) ? kSyncMax : kShortMax);
  bool unbuffered = caps().small_unbuffered;
  run(
      2,
      [&](Rank& r) {
        if (r.rank == 0) {
          std::vector<std::vector<uint8_t>> out(kN);
          std::vector<rdmx_request_t*> q;
          for (int i = 0; i < kN; ++i) {
            out[size_t(i)].resize(size_of(i));
            fill(out[size_t(i)], uint64_t(i));
            q.push_back(isend(r, 1, 7, out[size_t(i)].data(), size_of(i), 0,
                              sync_of(i) ? RDMX_SEND_SYNC : 0));
          }
          for (auto* x : q) EXPECT_EQ(r.finish(x).error, RDMX_OK) << rdmx_last_error(r.ctx);
          return;
        }
        std::vector<std::vector<uint8_t>> in(kN, std::vector<uint8_t>(kMax));
        auto receive = [&](int from, int to) {
          std::vector<rdmx_request_t*> q;
          for (int i = from; i < to; ++i) q.push_back(irecv(r, 0, 7, in[size_t(i)].data(), kMax));
          for (int i = from; i < to; ++i) {
            auto st = r.finish(q[size_t(i - from)]);
            EXPECT_EQ(st.error, RDMX_OK) << i;
            EXPECT_EQ(st.length, size_of(i)) << "message " << i << " reordered or cut";
            EXPECT_TRUE(check(in[size_t(i)].data(), size_of(i), uint64_t(i))) << i;
          }
        };
        receive(0, kN / 2);
        // Let the rest arrive before their receives (up to 2 s).
        auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        while (stats(r).unexpected == 0 && std::chrono::steady_clock::now() < until)
          rdmx_progress(r.ctx);
        EXPECT_GT(stats(r).unexpected, 0u);
        receive(kN / 2, kN);
        if (unbuffered)
          EXPECT_GE(stats(r).unbuffered_recvs, small);
        else
          EXPECT_EQ(stats(r).unbuffered_recvs, 0u);
      },
      SettingList{{"RDMX_CREDITS", "4"}});
}

// Small sends complete at once, and only one in a few asks the fabric for a completion:
// a rank that finalizes right after them must still get every one of them out.
TEST_P(EngineTest, SendsJustBeforeFinalizeArrive) {
  static constexpr int kN = 41;  // not a multiple of the signaling interval
  run(2, [](Rank& r) {
    if (r.rank == 0) {
      uint32_t first = 0;
      r.finish(isend(r, 1, 0, &first, sizeof first));  // connected from here on
      std::vector<uint32_t> v(kN);
      for (int i = 0; i < kN; ++i) {
        v[size_t(i)] = uint32_t(i + 1);
        EXPECT_EQ(r.finish(isend(r, 1, 1, &v[size_t(i)], sizeof v[0])).error, RDMX_OK);
      }
      EXPECT_EQ(rdmx_finalize(r.ctx), RDMX_OK);
      r.ctx = nullptr;
    } else {
      uint32_t got = ~0u;
      EXPECT_EQ(r.finish(irecv(r, 0, 0, &got, sizeof got)).error, RDMX_OK);
      // A receiver that falls behind: when it looks again the sender has finalized, and
      // all it sent (more than one poll's worth of completions) waits beside the news
      // of its going. It must be delivered first.
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      for (int i = 0; i < kN; ++i) {
        auto st = r.finish(irecv(r, 0, 1, &got, sizeof got));
        ASSERT_EQ(st.error, RDMX_OK) << "message " << i << " of " << kN;
        EXPECT_EQ(got, uint32_t(i + 1));
      }
    }
  });
}

// A message as the stress test generates it: everything is derived from a seed.
struct Planned {
  int32_t tag;
  uint64_t size;
};

std::vector<Planned> plan(int src, int dst, int count) {
  std::mt19937_64 g(uint64_t(src) * 1000 + uint64_t(dst));
  std::vector<Planned> v(static_cast<size_t>(count));
  for (auto& m : v) {
    m.tag = int32_t(g() % 9) - 3;  // -3..5
    uint64_t k = g() % 100;
    m.size = k < 70 ? 16 + g() % 240 : k < 92 ? 256 + g() % 8000 : 8200 + g() % 120000;
  }
  return v;
}

// Payload: {source, index} then a pattern seeded by both.
void stamp(std::vector<uint8_t>& b, int src, uint32_t index) {
  uint64_t seed = uint64_t(src) << 32 | index;
  for (size_t i = 8; i < b.size(); ++i) b[i] = pattern(seed, i);
  int32_t s = src;
  std::memcpy(b.data(), &s, 4);
  std::memcpy(b.data() + 4, &index, 4);
}

// What a receiver still expects from each source: per tag, the indices in send order.
// MPI says a receive gets the oldest matching message from a source, so a correct
// match is always at the front of its tag's queue.
class Expected {
 public:
  static constexpr int kMinTag = -3, kTags = 9;
  void add(int src, const std::vector<Planned>& v) {
    if (q_.size() <= size_t(src)) q_.resize(size_t(src) + 1);
    for (uint32_t i = 0; i < v.size(); ++i)
      q_[size_t(src)][size_t(v[i].tag - kMinTag)].push_back(i);
  }
  // The index the receive (source, tag) must get from src, or -1 if nothing matches.
  int64_t next(int src, int32_t tag) const {
    if (size_t(src) >= q_.size()) return -1;
    int64_t best = -1;
    for (int t = kMinTag; t < kMinTag + kTags; ++t) {
      if (tag == RDMX_ANY_TAG ? t < 0 : t != tag) continue;
      const auto& d = q_[size_t(src)][size_t(t - kMinTag)];
      if (!d.empty() && (best < 0 || d.front() < best)) best = d.front();
    }
    return best;
  }
  void pop(int src, int32_t tag) { q_[size_t(src)][size_t(tag - kMinTag)].pop_front(); }

 private:
  std::vector<std::array<std::deque<uint32_t>, kTags>> q_;
};

void stress(Rank& r, int per_pair) {
  constexpr size_t kWindow = 32;
  std::mt19937_64 rng(uint64_t(r.rank) + 99);
  struct Out {
    rdmx_request_t* req;
    std::vector<uint8_t> buf;
  };
  std::vector<std::vector<Planned>> out_plan(size_t(r.size)), in_plan(size_t(r.size));
  std::vector<size_t> next_send(size_t(r.size), 0);
  Expected expected;
  int expect = 0;
  for (int p = 0; p < r.size; ++p) {
    if (p == r.rank) continue;
    out_plan[size_t(p)] = plan(r.rank, p, per_pair);
    in_plan[size_t(p)] = plan(p, r.rank, per_pair);
    expected.add(p, in_plan[size_t(p)]);
    expect += per_pair;
  }
  auto possible = [&](int32_t src, int32_t tag) {
    for (int p = 0; p < r.size; ++p)
      if (p != r.rank && (src == RDMX_ANY_SOURCE || src == p) && expected.next(p, tag) >= 0)
        return true;
    return false;
  };
  std::vector<Out> inflight;
  std::vector<uint8_t> rbuf(200000);
  rdmx_request_t* rreq = nullptr;
  int32_t want_src = 0, want_tag = 0;
  int got = 0, failures = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  // Done when everything planned has been sent and has completed, and everything
  // expected has arrived: a rank that has received all it expects may still have sends
  // to make.
  auto all_sent = [&] {
    for (int p = 0; p < r.size; ++p)
      if (next_send[size_t(p)] != out_plan[size_t(p)].size()) return false;
    return true;
  };
  while ((got < expect || !inflight.empty() || !all_sent()) && failures == 0) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "stress made no progress";
    // Rendezvous sends complete only once matched, so they do not count against the
    // window: a receiver may legitimately wait for a message queued behind them.
    size_t eager_inflight = 0;
    for (const Out& o : inflight) eager_inflight += o.buf.size() <= 8192;
    for (int p = 0; p < r.size && eager_inflight < kWindow; ++p) {
      if (p == r.rank || next_send[size_t(p)] == out_plan[size_t(p)].size()) continue;
      uint32_t idx = uint32_t(next_send[size_t(p)]++);
      const Planned& m = out_plan[size_t(p)][idx];
      Out o{nullptr, std::vector<uint8_t>(m.size)};
      stamp(o.buf, r.rank, idx);
      o.req = isend(r, p, m.tag, o.buf.data(), m.size);
      eager_inflight += m.size <= 8192;
      inflight.push_back(std::move(o));
    }
    // One receive of a random shape at a time, for something still to come.
    if (!rreq && got < expect) {
      do {
        uint64_t k = rng() % 4;
        want_src =
            k & 1
                ? RDMX_ANY_SOURCE
                : int32_t((uint64_t(r.rank) + 1 + rng() % uint64_t(r.size - 1)) % uint64_t(r.size));
        want_tag = k & 2 ? RDMX_ANY_TAG : int32_t(rng() % 9) - 3;
      } while (!possible(want_src, want_tag));
      rreq = irecv(r, want_src, want_tag, rbuf.data(), rbuf.size());
    }
    rdmx_progress(r.ctx);
    for (size_t i = 0; i < inflight.size();) {
      int done = 0;
      rdmx_status_info_t st{};
      rdmx_test(inflight[i].req, &done, &st);
      if (!done) {
        ++i;
        continue;
      }
      EXPECT_EQ(st.error, RDMX_OK);
      rdmx_request_free(r.ctx, inflight[i].req);
      inflight[i] = std::move(inflight.back());
      inflight.pop_back();
    }
    int done = 0;
    rdmx_status_info_t st{};
    if (rreq && (rdmx_test(rreq, &done, &st), done)) {
      rdmx_request_free(r.ctx, rreq);
      rreq = nullptr;
      int32_t src = -1;
      uint32_t idx = 0;
      std::memcpy(&src, rbuf.data(), 4);
      std::memcpy(&idx, rbuf.data() + 4, 4);
      bool ok = st.error == RDMX_OK && src == st.source && src >= 0 && src < r.size &&
                src != r.rank && idx < uint32_t(per_pair) &&
                expected.next(src, want_tag) == int64_t(idx);
      if (ok) {
        const Planned& m = in_plan[size_t(src)][idx];
        ok = m.size == st.length && m.tag == st.tag;
        uint64_t seed = uint64_t(src) << 32 | idx;
        for (size_t i = 8; ok && i < st.length; ++i) ok = rbuf[i] == pattern(seed, i);
      }
      if (!ok) {
        ADD_FAILURE() << "rank " << r.rank << " got a wrong message: src " << src << " index "
                      << idx << " tag " << st.tag << " length " << st.length << " for receive ("
                      << want_src << ", " << want_tag << ")";
        ++failures;
      } else {
        expected.pop(src, st.tag);
        ++got;
      }
    }
  }
}

TEST_P(EngineTest, RandomizedStress) {
  // 100,000 messages in all where the fabric is fast; fewer on emulated RDMA.
  using Speed = Capabilities::Speed;
  Speed rate = caps().message_rate;
  int total = rate == Speed::High ? 100000 : rate == Speed::Medium ? 30000 : 3000;
  if (const char* n = std::getenv("RDMX_TEST_STRESS_MESSAGES")) total = std::atoi(n);
  run(3, [total](Rank& r) { stress(r, total / 6); });
}

}  // namespace
}  // namespace rdmx::test
