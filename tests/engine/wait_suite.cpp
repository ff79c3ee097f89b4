// Waiting: rdmx_wait polls while there is work and then sleeps on the fabric's wait
// object, so a rank waiting for a late message leaves the processor to others; every
// wait still ends within its bound, and rdmx_wait_event wakes when something arrives.
#include <time.h>

#include <chrono>
#include <thread>

#include "engine/engine_test.h"

namespace rdmx::test {
namespace {

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Ranks 0 and 1 exchange one message, so that the waits that follow are not for a
// connection.
void connect_pair(Rank& r) {
  int token = 0;
  rdmx_request_t* first = nullptr;
  if (r.rank == 0) first = isend(r, 1, 1, &token, sizeof token);
  if (r.rank == 1) first = irecv(r, 0, 1, &token, sizeof token);
  r.finish(first);
  r.barrier();
}

// Rank 1 waits for a message that rank 0 sends 400 ms late: the wait must take most of
// those 400 ms of wall time but only a fraction of them on the processor.
TEST_P(EngineTest, AWaitingRankSleeps) {
  run(2, [](Rank& r) {
    int token = 0;
    connect_pair(r);
    if (r.rank == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(400));
      token = 42;
      r.finish(isend(r, 1, 2, &token, sizeof token));
    } else {
      rdmx_request_t* req = irecv(r, 0, 2, &token, sizeof token);
      auto start = std::chrono::steady_clock::now();
      double cpu0 = thread_cpu_seconds();
      r.finish(req, 20000);
      double wall = seconds_since(start), cpu = thread_cpu_seconds() - cpu0;
      EXPECT_EQ(token, 42);
      EXPECT_GT(wall, 0.2) << "the message cannot have arrived before it was sent";
      EXPECT_LT(cpu, wall / 3) << "the waiting rank spun: " << cpu << " s of processor in " << wall
                               << " s of waiting";
    }
    r.barrier();
  });
}

TEST_P(EngineTest, WaitsEndWithinTheirBound) {
  run(2, [](Rank& r) {
    if (r.rank == 1) {
      int never = 0;
      rdmx_request_t* req = irecv(r, 0, 9, &never, sizeof never);
      auto start = std::chrono::steady_clock::now();
      EXPECT_EQ(rdmx_wait(r.ctx, req, 300, nullptr), RDMX_ERR_TIMEOUT);
      double wall = seconds_since(start);
      EXPECT_GE(wall, 0.3);
      EXPECT_LT(wall, 5.0);
      start = std::chrono::steady_clock::now();
      for (int i = 0; i < 3; ++i) EXPECT_EQ(rdmx_wait_event(r.ctx, 100), RDMX_OK);
      EXPECT_LT(seconds_since(start), 5.0);
      EXPECT_EQ(rdmx_wait_event(r.ctx, -1), RDMX_ERR_INVALID);
      EXPECT_EQ(rdmx_cancel(r.ctx, req), RDMX_OK);
      EXPECT_EQ(r.finish(req).error, RDMX_ERR_CANCELLED);
    }
    r.barrier();
  });
}

// A caller driving progress itself: rdmx_progress until idle, then rdmx_wait_event with
// a long timeout; the message must wake it long before that.
TEST_P(EngineTest, WaitEventWakesOnArrival) {
  run(2, [](Rank& r) {
    int token = 0;
    connect_pair(r);
    if (r.rank == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      token = 7;
      r.finish(isend(r, 1, 2, &token, sizeof token));
    } else {
      rdmx_request_t* req = irecv(r, 0, 2, &token, sizeof token);
      auto start = std::chrono::steady_clock::now();
      int done = 0;
      while (!done && seconds_since(start) < 20) {
        rdmx_test(req, &done, nullptr);
        if (!done && rdmx_progress(r.ctx) == 0) {
          EXPECT_EQ(rdmx_wait_event(r.ctx, 10000), RDMX_OK);
        }
      }
      EXPECT_TRUE(done);
      EXPECT_LT(seconds_since(start), 8.0) << "a 10 s sleep was not woken by the message";
      EXPECT_EQ(token, 7);
      rdmx_request_free(r.ctx, req);
    }
    r.barrier();
  });
}

}  // namespace
}  // namespace rdmx::test
