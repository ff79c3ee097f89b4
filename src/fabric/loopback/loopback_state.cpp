#include "fabric/loopback/loopback_state.h"

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
  f.reads_posted = 0;
  f.sends_posted = 0;
  f.max_reads_in_flight = 0;
  f.depth_violations = 0;
}

World& World::get() {
  static World w;
  return w;
}

void EpState::complete(Completion c) {
  c.ready_tick = tick_ + faults().completion_delay.load(std::memory_order_relaxed);
  cq_.push(c);
}

int EpState::take_completions(Completion* out, int max) {
  std::lock_guard<SpinLock> g(mu);
  ++tick_;
  int n = 0;
  while (n < max && !cq_.empty() && cq_.front().ready_tick <= tick_) {
    out[n] = cq_.pop();
    if (out[n].is_read && out[n].conn) --out[n].conn->reads_in_flight;
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
  // As on a device, a connection fails only after every message that arrived on it
  // has been reported.
  const CmEvent& e = events_.front();
  if (e.kind == CmEvent::ConnError &&
      cq_.any([&e](const Completion& c) { return c.kind == Completion::Recv && c.user == e.user; }))
    return false;
  out = events_.pop();
  return true;
}

void EpState::break_locked(Conn* c, fabric::Failure why, const char* text) {
  if (c->broken) return;
  c->broken = true;
  while (!c->recvs.empty()) {
    RecvWr r = c->recvs.pop();
    complete({Completion::WrError, false, fabric::Failure::Flushed, 0, r.wr, 0, c->user, c});
  }
  CmEvent e{};
  e.kind = CmEvent::ConnError;
  e.failure = why;
  e.user = c->user;
  e.text = text;
  notify(std::move(e));
}

}  // namespace rdmx::loopback
