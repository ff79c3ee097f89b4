// The measurement loops of rdmx_perf and rdmx_pingpong, run by both ranks of a pair
// (two_ranks.h). The pair's first rank (role 0) times; the other only answers. Waits
// spin on rdmx_test and rdmx_progress, as an MPI library polls, and give up at a
// deadline or once the other rank has failed, so that nothing hangs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/two_ranks.h"

namespace rdmx::tools {

enum class Test {
  kLatency,        // ping-pong; a sample is half of one round trip
  kBandwidth,      // role 0 sends a window of non-blocking sends, role 1 acknowledges it
  kBidirectional,  // both ranks send a window to each other at once
  kMessageRate,    // the bandwidth loop, counted in messages (osu_mbw_mr with one pair)
};

const char* test_name(Test t);

struct Step {
  uint64_t size = 1;  // bytes per message
  int iters = 1000;   // timed iterations (latency) or windows (the others)
  int warmup = 100;   // untimed iterations or windows before them
  int window = 64;    // messages in flight per window
  int timeout_ms = 30000;
};

// One rank's side of a test at one size. buf holds at least 2 * size bytes (a send and
// a receive half). On role 0, samples gets one time per iteration or window, in
// microseconds: half a round trip for latency, a whole window (up to the
// acknowledgement) for the others. On failure returns false with error set.
bool run_step(const RankEnv& env, Test test, const Step& step, uint8_t* buf,
              std::vector<double>& samples_us, std::string& error);

// Both ranks of the pair meet: each sends a zero-byte message to the other and receives one.
bool meet(const RankEnv& env, int timeout_ms, std::string& error);

}  // namespace rdmx::tools
