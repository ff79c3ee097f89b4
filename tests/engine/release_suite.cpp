// Requests rdmx releases itself once their callback returns (RDMX_RELEASE_AFTER_CALLBACK):
// every such request goes back to rdmx, whatever completed it (an eager or rendezvous
// message, a send, a cancel), and requests without a callback still wait for
// rdmx_request_free. requests_in_use counts what is outstanding.
#include <chrono>
#include <cstring>
#include <vector>

#include "engine/engine_test.h"

namespace rdmx::test {
namespace {

struct Done {
  int count = 0;
  int errors = 0;
  int cancelled = 0;
};

void on_done(rdmx_request_t* req, const rdmx_status_info_t* st, void* user) {
  auto* d = static_cast<Done*>(user);
  EXPECT_NE(req, nullptr);
  ++d->count;
  if (st->error == RDMX_ERR_CANCELLED)
    ++d->cancelled;
  else if (st->error != RDMX_OK)
    ++d->errors;
}

// Progress until want callbacks have run; fails the test after a minute.
void progress_until(Rank& r, const Done& d, int want) {
  auto until = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (d.count < want && std::chrono::steady_clock::now() < until) rdmx_progress(r.ctx);
  ASSERT_EQ(d.count, want) << "callbacks run before the deadline";
}

TEST_P(EngineTest, RequestsWithACallbackAreReleasedWhenItReturns) {
  const std::vector<uint64_t> sizes = {0, 8, 4096, 200000};  // inline to rendezvous
  constexpr int kRounds = 50;
  run(2, [&sizes](Rank& r) {
    ASSERT_EQ(rdmx_set_request_release(r.ctx, RDMX_RELEASE_AFTER_CALLBACK), RDMX_OK);
    int peer = 1 - r.rank;
    uint64_t before = stats(r).requests_in_use;
    Done d;
    std::vector<std::vector<uint8_t>> out(sizes.size()), in(sizes.size() * kRounds);
    for (size_t k = 0; k < sizes.size(); ++k) {
      out[k].resize(sizes[k]);
      fill(out[k], uint64_t(r.rank) * 10 + k);
    }
    int posted = 0;
    for (int round = 0; round < kRounds; ++round)
      for (size_t k = 0; k < sizes.size(); ++k, posted += 2) {
        std::vector<uint8_t>& b = in[size_t(round) * sizes.size() + k];
        b.resize(sizes[k]);
        int tag = round * 10 + int(k);
        rdmx_request_t* q = nullptr;
        ASSERT_EQ(rdmx_irecv(r.ctx, peer, 0, tag, b.data(), b.size(), on_done, &d, &q), RDMX_OK);
        ASSERT_EQ(rdmx_isend(r.ctx, peer, 0, tag, out[k].data(), out[k].size(), 0, on_done, &d, &q),
                  RDMX_OK);
      }
    progress_until(r, d, posted);
    EXPECT_EQ(d.errors, 0);
    for (int round = 0; round < kRounds; ++round)
      for (size_t k = 0; k < sizes.size(); ++k) {
        const std::vector<uint8_t>& b = in[size_t(round) * sizes.size() + k];
        EXPECT_TRUE(check(b.data(), b.size(), uint64_t(peer) * 10 + k)) << sizes[k] << " bytes";
      }
    r.barrier();  // the peer's reads of this rank's rendezvous sends are over
    EXPECT_EQ(stats(r).requests_in_use, before) << "every request went back to rdmx";

    // A request without a callback is the caller's until rdmx_request_free.
    int v = 0, w = 5;
    rdmx_request_t* q = irecv(r, peer, 1000, &v, sizeof v);
    r.finish(isend(r, peer, 1000, &w, sizeof w));
    EXPECT_EQ(stats(r).requests_in_use, before + 1);
    EXPECT_EQ(r.finish(q).error, RDMX_OK);
    EXPECT_EQ(v, 5);
    EXPECT_EQ(stats(r).requests_in_use, before);
  });
}

TEST_P(EngineTest, ACancelledReceiveIsReleasedAfterItsCallback) {
  run(1, [](Rank& r) {
    ASSERT_EQ(rdmx_set_request_release(r.ctx, RDMX_RELEASE_AFTER_CALLBACK), RDMX_OK);
    uint64_t before = stats(r).requests_in_use;
    Done d;
    int v = 0;
    rdmx_request_t* q = nullptr;
    ASSERT_EQ(rdmx_irecv(r.ctx, RDMX_ANY_SOURCE, 0, 7, &v, sizeof v, on_done, &d, &q), RDMX_OK);
    EXPECT_EQ(stats(r).requests_in_use, before + 1);
    ASSERT_EQ(rdmx_cancel(r.ctx, q), RDMX_OK);
    EXPECT_EQ(d.cancelled, 1);
    EXPECT_EQ(stats(r).requests_in_use, before);
  });
}

TEST_P(EngineTest, RequestsKeepTheReleaseRuleTheyWereMadeUnder) {
  run(1, [](Rank& r) {
    uint64_t before = stats(r).requests_in_use;
    Done d;
    int v = 0, w = 3;
    rdmx_request_t* q = nullptr;
    ASSERT_EQ(rdmx_irecv(r.ctx, 0, 0, 9, &v, sizeof v, on_done, &d, &q), RDMX_OK);
    ASSERT_EQ(rdmx_set_request_release(r.ctx, RDMX_RELEASE_AFTER_CALLBACK), RDMX_OK);
    r.finish(isend(r, 0, 9, &w, sizeof w));
    EXPECT_EQ(d.count, 1);
    EXPECT_EQ(v, 3);
    EXPECT_EQ(stats(r).requests_in_use, before + 1) << "made under RDMX_RELEASE_ON_FREE";
    rdmx_request_free(r.ctx, q);
    EXPECT_EQ(stats(r).requests_in_use, before);
  });
}

TEST_P(EngineTest, AnUnknownReleaseRuleIsRefused) {
  run(1, [](Rank& r) {
    EXPECT_EQ(rdmx_set_request_release(r.ctx, 7), RDMX_ERR_INVALID);
    std::string why = rdmx_last_error(r.ctx);
    EXPECT_NE(why.find("rule 7"), std::string::npos) << why;
    EXPECT_NE(why.find("RDMX_RELEASE_AFTER_CALLBACK"), std::string::npos) << why;
    EXPECT_EQ(rdmx_set_request_release(nullptr, RDMX_RELEASE_ON_FREE), RDMX_ERR_INVALID);
  });
}

}  // namespace
}  // namespace rdmx::test
