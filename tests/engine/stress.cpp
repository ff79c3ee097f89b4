// The randomized stress the engine suites run: every rank sends a planned sequence of
// messages to every other across the protocol thresholds (eager, mid-size, rendezvous),
// with wildcard receives of random shape, and checks each message it gets against MPI's
// matching rules: the oldest matching message from a source comes first.
#include "engine/stress.h"

#include <array>
#include <chrono>
#include <cstring>
#include <deque>
#include <random>
#include <vector>

#include "engine/engine_test.h"

namespace rdmx::test {
namespace {

// A message as the stress test generates it: everything is derived from a seed.
struct Planned {
  int32_t tag;
  uint64_t size;
  bool sync;
};

std::vector<Planned> plan(int src, int dst, int count, bool sync) {
  std::mt19937_64 g(uint64_t(src) * 1000 + uint64_t(dst));
  std::vector<Planned> v(static_cast<size_t>(count));
  for (auto& m : v) {
    m.tag = int32_t(g() % 9) - 3;  // -3..5
    uint64_t k = g() % 100;
    m.size = k < 70 ? 16 + g() % 240 : k < 92 ? 256 + g() % 8000 : 8200 + g() % 120000;
    m.sync = sync && g() % 8 == 0;
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

}  // namespace

void stress(Rank& r, int per_pair, bool sync) {
  constexpr size_t kWindow = 32;
  std::mt19937_64 rng(uint64_t(r.rank) + 99);
  struct Out {
    rdmx_request_t* req;
    std::vector<uint8_t> buf;
    bool waits_for_match;  // rendezvous or synchronous: completes once matched
  };
  std::vector<std::vector<Planned>> out_plan(size_t(r.size)), in_plan(size_t(r.size));
  std::vector<size_t> next_send(size_t(r.size), 0);
  Expected expected;
  int expect = 0;
  for (int p = 0; p < r.size; ++p) {
    if (p == r.rank) continue;
    out_plan[size_t(p)] = plan(r.rank, p, per_pair, sync);
    in_plan[size_t(p)] = plan(p, r.rank, per_pair, sync);
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
    // Rendezvous and synchronous sends complete only once matched, so they do not count
    // against the window: a receiver may legitimately wait for a message queued behind
    // them.
    size_t eager_inflight = 0;
    for (const Out& o : inflight) eager_inflight += !o.waits_for_match;
    for (int p = 0; p < r.size && eager_inflight < kWindow; ++p) {
      if (p == r.rank || next_send[size_t(p)] == out_plan[size_t(p)].size()) continue;
      uint32_t idx = uint32_t(next_send[size_t(p)]++);
      const Planned& m = out_plan[size_t(p)][idx];
      Out o{nullptr, std::vector<uint8_t>(m.size), m.size > 8192 || m.sync};
      stamp(o.buf, r.rank, idx);
      o.req = isend(r, p, m.tag, o.buf.data(), m.size, 0, m.sync ? RDMX_SEND_SYNC : 0);
      eager_inflight += !o.waits_for_match;
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
                      << idx << " tag " << st.tag << " length " << st.length << " error "
                      << st.error << " (expected index "
                      << (src >= 0 && src < r.size ? expected.next(src, want_tag) : -2)
                      << ") for receive (" << want_src << ", " << want_tag << ")";
        ++failures;
      } else {
        expected.pop(src, st.tag);
        ++got;
      }
    }
  }
}

}  // namespace rdmx::test
