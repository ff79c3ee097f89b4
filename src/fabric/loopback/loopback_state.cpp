#include "fabric/loopback/loopback_state.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ctime>

#include "fabric/loopback/loopback_faults.h"

namespace rdmx::loopback {

Faults& faults() {
  static Faults f;
  return f;
}

void reset_faults() {
  Faults& f = faults();
  f.completion_delay = 0;
  f.drop_at_read = -1;
  f.error_at_send = -1;
  f.corrupt_at_send = -1;
  f.corrupt_offset = 0;
  f.corrupt_xor = 0;
  f.corrupt_len = 1;
  f.corrupt_fill = false;
  f.reads_posted = 0;
  f.sends_posted = 0;
  f.max_reads_in_flight = 0;
  f.refuse_accepts = 0;
  f.depth_violations = 0;
  f.established_late = 0;
  f.messages_before_established = 0;
}

World& World::get() {
  static World w;
  return w;
}

void EpState::complete(Completion c) {
  c.ready_tick = tick_ + faults().completion_delay.load(std::memory_order_relaxed);
  cq_.push(c);
  ring();
}

void EpState::wake() {
  doorbell_.fetch_add(1, std::memory_order_seq_cst);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&doorbell_), FUTEX_WAKE_PRIVATE, 1, nullptr,
          nullptr, 0);
}

void EpState::wait(int timeout_ms) {
  if (timeout_ms <= 0) return;
  sleeping_.store(true, std::memory_order_seq_cst);
  uint32_t seen = doorbell_.load(std::memory_order_seq_cst);
  bool idle;
  {
    std::lock_guard<SpinLock> g(mu);
    // A delayed completion becomes ready only as progress polls: never sleep on one.
    idle = cq_.empty() && events_.empty();
  }
  if (idle) {
    timespec ts{timeout_ms / 1000, long(timeout_ms % 1000) * 1000000L};
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&doorbell_), FUTEX_WAIT_PRIVATE, seen, &ts,
            nullptr, 0);
  }
  sleeping_.store(false, std::memory_order_relaxed);
}

int EpState::take_completions(Completion* out, int max) {
  std::lock_guard<SpinLock> g(mu);
  ++tick_;
  int n = 0;
  while (n < max && !cq_.empty() && cq_.front().ready_tick <= tick_) {
    out[n] = cq_.pop();
    if (out[n].is_read && out[n].conn) --out[n].conn->reads_in_flight;
    Conn* c = out[n].conn;
    if ((out[n].kind == Completion::Recv || out[n].kind == Completion::RecvUnbuffered) && c &&
        !c->reported_recv) {
      c->reported_recv = true;
      if (events_.any([c](const CmEvent& e) { return e.held == c; }))
        faults().messages_before_established.fetch_add(1, std::memory_order_relaxed);
    }
    ++n;
  }
  return n;
}

bool EpState::take_event(CmEvent& out) {
  std::lock_guard<SpinLock> g(mu);
  if (events_.empty()) {
    has_events_.store(false, std::memory_order_relaxed);
    return false;
  }
  const CmEvent& e = events_.front();
  // An established event held back (Faults::established_late) until its connection has
  // reported a message, or for a bounded number of polls.
  if (e.held && !e.held->reported_recv && e.ready_tick > tick_) return false;
  // As on a device, a connection fails only after every message that arrived on it
  // has been reported.
  if (e.kind == CmEvent::ConnError && cq_.any([&e](const Completion& c) {
        return (c.kind == Completion::Recv || c.kind == Completion::RecvUnbuffered) &&
               c.user == e.user;
      }))
    return false;
  out = events_.pop();
  return true;
}

void EpState::break_locked(Conn* c, fabric::Failure why, const char* text) {
  if (c->broken) return;
  c->broken = true;
  while (!c->recvs.empty()) {
    RecvWr r = c->recvs.pop();
    complete({Completion::WrError, false, fabric::Failure::Flushed, 0, r.wr, 0, c->user, c, {}});
  }
  CmEvent e{};
  e.kind = CmEvent::ConnError;
  e.failure = why;
  e.user = c->user;
  e.text = text;
  notify(std::move(e));
}

}  // namespace rdmx::loopback
