// Faults the loopback fabric injects, process-wide, for tests of failure handling.
// Counters are 1-based over the whole process; -1 disables a fault.
#pragma once

#include <atomic>
#include <cstdint>

namespace rdmx::loopback {

struct Faults {
  std::atomic<uint32_t> completion_delay{0};  // completions show up this many polls late
  std::atomic<int64_t> drop_at_read{-1};      // the Nth READ posted breaks its connection
  std::atomic<int64_t> error_at_send{-1};     // the Nth SEND posted completes in error
  std::atomic<int64_t> corrupt_at_send{-1};   // the Nth SEND arrives with a byte changed:
  std::atomic<uint32_t> corrupt_offset{0};    //   this one,
  std::atomic<uint8_t> corrupt_xor{0};        //   xor this
  std::atomic<uint32_t> corrupt_len{1};       //   into this many bytes from it,
  std::atomic<bool> corrupt_fill{false};      //   or set them to it
  std::atomic<int64_t> reads_posted{0};
  std::atomic<int64_t> sends_posted{0};
  std::atomic<uint64_t> max_reads_in_flight{0};  // high-water mark on any connection
  std::atomic<uint64_t> depth_violations{0};     // READs posted beyond the negotiated depth
  std::atomic<int64_t> refuse_accepts{0};        // the next N connections offered cannot be made
  // A passive side's established event shows up only after the first message on its
  // connection has been reported (as rdma_cm may deliver it after the first receive
  // completions), or after this many polls, whichever is first; 0: at once.
  std::atomic<uint32_t> established_late{0};
  // Connections whose first message was reported while their established event was held.
  std::atomic<uint64_t> messages_before_established{0};
};

Faults& faults();
// Clears every fault and counter.
void reset_faults();

}  // namespace rdmx::loopback
