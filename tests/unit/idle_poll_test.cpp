// When a rarely-needed look is due (core/idle_poll.h): seldom while calls come fast,
// at every call once they come a millisecond or more apart.
#include "core/idle_poll.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace rdmx {
namespace {

int due_in(IdlePoll<>& p, int calls, std::chrono::microseconds apart) {
  int due = 0;
  for (int i = 0; i < calls; ++i) {
    if (apart.count()) std::this_thread::sleep_for(apart);
    due += p.due();
  }
  return due;
}

TEST(IdlePoll, FastCallsAreDueAtMostOncePerTick) {
  IdlePoll<> p;
  // Calls far faster than the coarse clock's tick of 1 to 4 ms: due only when the clock
  // has ticked since the last time.
  auto t0 = std::chrono::steady_clock::now();
  int due = due_in(p, 1600, std::chrono::microseconds(0));
  auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  EXPECT_LE(due, ms + 2) << "at most once per coarse tick";
}

TEST(IdlePoll, SlowCallsAreEachDue) {
  IdlePoll<> p;
  // Calls 5 ms apart, longer than a coarse tick: once the first look (at the 16th call)
  // finds them slow, every call is due, where 16 calls used to pass between looks.
  int due = due_in(p, 40, std::chrono::milliseconds(5));
  EXPECT_GE(due, 24);
}

TEST(IdlePoll, ForceMakesTheNextCallDue) {
  IdlePoll<64, false> p;
  EXPECT_FALSE(p.due());
  p.force();
  EXPECT_TRUE(p.due());
  // Without a tick in between, kOncePerTick false is due all the same every 64 calls.
  int due = 0;
  for (int i = 0; i < 128; ++i) due += p.due();
  EXPECT_GE(due, 2);
}

}  // namespace
}  // namespace rdmx
