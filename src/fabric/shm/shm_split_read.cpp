// Split reads: a large cross-memory READ whose copy both processes share.
//
// One process_vm_readv copies at what one core can move, while the process whose buffer
// is read sits in its progress loop waiting for the rendezvous to finish. Here the
// reader lays the read out in an entry of its own segment (SplitRead), tells the peer
// through its arrivals queue, and copies the front half; the peer, on the entry, copies
// the back half with process_vm_writev straight into the reader's buffer, so that both
// cores copy at once.
//
// The halves stay with their sides from one read to the next, so that each side's half
// of a reused buffer stays in its own cache: when the back half went to whichever side
// came first, its lines moved between the cores and windows of 256 KiB lost a third.
// So while the peer works through earlier back halves the reader goes on to the next
// read's front half, and takes a back half itself only where the peer is not serving:
// at once if the peer did not copy the last one it could have, else once it is the
// oldest left and has waited kPeerGraceNs. A read never waits on a busy peer for long.
// The peer copies only from memory it registered for remote reads.
//
// A read that fails (the connection breaks, or the peer's memory is not there) is
// completed only once the peer cannot write into its buffer any more: the caller may
// free the buffer at once. A copy the kernel refuses is not a failure: the read goes
// on without it, as an unsplit read does (shm_read.cpp).
#include <signal.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>

#include "core/log.h"
#include "fabric/shm/shm_fabric.h"
#include "fabric/shm/shm_faults.h"

namespace rdmx::shm {
namespace {

constexpr uint64_t kPage = 4096;
// A peer that serves claims a back half within a microsecond of reaching it.
constexpr uint64_t kPeerGraceNs = 20000;
// A peer copies a back half it has claimed in one step, a few milliseconds at most
// for the largest read; a failed read waits this long for it, while the peer lives.
constexpr uint64_t kPeerCopyWaitNs = 2000000000;

// The front part: half, on a page boundary.
uint64_t front_of(uint64_t len) { return ((len + 1) / 2 + kPage - 1) & ~(kPage - 1); }

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

// Writes len bytes of this process's memory at from to the peer's at to; false if the
// kernel refused part of it.
bool cma_write(pid_t pid, uint64_t to, uint64_t from, uint64_t len) {
  if (faults().cma_write_refused.load(std::memory_order_relaxed)) [[unlikely]]
    return errno = EPERM, false;
  uint64_t done = 0;
  while (done < len) {
    iovec l{reinterpret_cast<void*>(from + done), len - done};
    iovec r{reinterpret_cast<void*>(to + done), len - done};
    ssize_t n = ::process_vm_writev(pid, &l, 1, &r, 1, 0);
    if (n <= 0) return false;
    done += uint64_t(n);
  }
  return true;
}

}  // namespace

bool Fabric::split_read(Conn* c, uint8_t* local, uint64_t len, uint64_t raddr, uint64_t wr) {
  uint64_t front = front_of(len);
  if (front >= len || c->peer_arrivals.full(1)) return false;
  // An entry is free once its read is done and the peer has let go of it.
  uint32_t e = 0;
  for (; e < c->split_state.size(); ++e) {
    SplitState& st = c->split_state[e];
    if (st.kind == SplitState::Closing && c->splits[e].finished.load(std::memory_order_acquire))
      st.kind = SplitState::Free;
    if (st.kind == SplitState::Free) break;
  }
  if (e == c->split_state.size()) return false;
  SplitRead& s = c->splits[e];
  s.back_claimed.store(0, std::memory_order_relaxed);
  s.failed.store(0, std::memory_order_relaxed);
  s.finished.store(0, std::memory_order_relaxed);
  s.done.store(0, std::memory_order_relaxed);
  s.raddr = raddr;
  s.local = reinterpret_cast<uintptr_t>(local);
  s.len = len;
  s.front = front;
  Arrival& a = c->peer_arrivals.next();
  a.kind = Arrival::SplitRead;
  a.buf = {0, e};
  c->peer_arrivals.commit(a);  // publishes the entry's fields with it
  wake_peer(c);
  ++split_reads_;
  SplitState& st = c->split_state[e];
  st = {SplitState::Open, wr, 0, ++c->split_seq};
  ++c->splits_open;
  if (uint32_t us = faults().split_front_delay_us.load(std::memory_order_relaxed)) [[unlikely]]
    ::usleep(us);
  fabric::Failure f = fabric::Failure::Other;
  if (!cma_read(c, local, front, raddr, f)) {
    if (f != fabric::Failure::Other) return split_failed(c, e, f), true;
    // Refused (a policy changed): the whole read goes by copies, once the peer has let
    // go of the back half.
    stop_peer_copy(c, e);
    close_split(c, e);
    c->cma = false;
    return false;
  }
  st.mine = front;
  // Alone, the read's back half is the peer's now or never: a serving peer has claimed
  // it while the front was copied.
  if ((c->splits_open == 1 || !c->split_peer_serves) && !take_back(c, e)) return true;
  finish_splits(c);
  return true;
}

// Copies the back half of this side's split read e if the peer has not claimed it;
// false if the read failed.
bool Fabric::take_back(Conn* c, uint32_t e) {
  SplitRead& s = c->splits[e];
  if (s.back_claimed.exchange(1, std::memory_order_acq_rel)) return true;
  c->split_state[e].back_mine = true;
  c->split_peer_serves = false;
  fabric::Failure f = fabric::Failure::Other;
  if (!cma_read(c, reinterpret_cast<uint8_t*>(s.local) + s.front, s.len - s.front,
                s.raddr + s.front, f)) {
    split_failed(c, e, f);
    return false;
  }
  c->split_state[e].mine = s.len;
  return true;
}

void Fabric::split_failed(Conn* c, uint32_t e, fabric::Failure f) {
  stop_peer_copy(c, e);
  close_split(c, e);
  f = f == fabric::Failure::Flushed ? f : fabric::Failure::RemoteAccess;
  complete(Completion::WrError, f, c->split_state[e].wr, c->user);
  break_conn(c, f,
             f == fabric::Failure::Flushed ? "the local peer is gone"
                                           : "the peer's buffer is not readable at that address");
}

// Read e is done with, well or not: its entry is free once the peer lets go of it.
void Fabric::close_split(Conn* c, uint32_t e) {
  c->split_state[e].kind = SplitState::Closing;
  --c->splits_open;
}

// Once this returns the peer does not write into read e's buffer: the back half is
// claimed for this side if the peer has not claimed it, else the peer's copy, under way
// (it claims and copies in one step), is waited for while the peer lives, for at most
// kPeerCopyWaitNs.
void Fabric::stop_peer_copy(Conn* c, uint32_t e) {
  SplitRead& s = c->splits[e];
  SplitState& st = c->split_state[e];
  if (st.back_mine || !s.back_claimed.exchange(1, std::memory_order_acq_rel)) {
    st.back_mine = true;
    return;
  }
  if (c->ending) return;  // the peer closed its end, after its last copy
  uint64_t start = now_ns();
  while (!s.finished.load(std::memory_order_acquire)) {
    uint64_t waited = now_ns() - start;
    if (waited > kPeerCopyWaitNs) {
      RDMX_LOG(LogLevel::Warn, -1,
               "shm: the local peer (pid %d) was still copying into a failed read's buffer "
               "(%llu bytes at %p) after %llu ms; the buffer may still change",
               int(c->pid), (unsigned long long)(s.len - s.front),
               reinterpret_cast<void*>(s.local + s.front),
               (unsigned long long)(kPeerCopyWaitNs / 1000000));
      return;
    }
    if (waited > 1000000) {  // the peer is not running: is it there at all?
      if (c->pid > 0 && ::kill(c->pid, 0) != 0 && errno == ESRCH) return;
      ::usleep(100);
    }
  }
}

// The peer asks this side to copy the back half of a read of this side's memory.
void Fabric::serve_split(Conn* c, uint32_t entry) {
  if (entry >= c->peer_splits_cap) {
    break_conn(c, fabric::Failure::Other,
               "the peer asked for a split read of entry " + std::to_string(entry) +
                   " (its segment has " + std::to_string(c->peer_splits_cap) + ")");
    return;
  }
  SplitRead& s = c->peer_splits[entry];
  uint64_t raddr = s.raddr, to = s.local, len = s.len, front = s.front;
  // Only what this side registered for remote reads, and only where the kernel lets it
  // write to the peer (else the peer copies alone).
  if (c->cma && front < len && readable(raddr, len) &&
      !s.back_claimed.exchange(1, std::memory_order_acq_rel)) {
    if (uint32_t us = faults().split_copy_delay_us.load(std::memory_order_relaxed)) [[unlikely]]
      ::usleep(us);
    if (!cma_write(c->pid, to + front, raddr + front, len - front)) {
      s.failed.store(1, std::memory_order_relaxed);
      if (errno == EPERM) c->cma = false;  // refused now: this side's reads copy too
    } else {
      ++split_halves_served_;
    }
    s.done.store(len - front, std::memory_order_release);
  }
  s.finished.store(1, std::memory_order_release);
}

// Completes every split read whose halves are both copied, and copies the back half of
// the oldest one left where the peer does not.
void Fabric::finish_splits(Conn* c) {
  uint32_t oldest = UINT32_MAX;
  for (uint32_t e = 0; e < c->split_state.size(); ++e) {
    SplitState& st = c->split_state[e];
    if (st.kind != SplitState::Open) continue;
    const SplitRead& s = c->splits[e];
    uint64_t theirs = s.done.load(std::memory_order_acquire);
    if (st.mine + theirs != s.len) {
      if (oldest == UINT32_MAX || st.seq < c->split_state[oldest].seq) oldest = e;
      continue;
    }
    close_split(c, e);
    if (s.failed.load(std::memory_order_relaxed)) {
      // The kernel refused the peer's copy: this side reads the back half itself, by
      // CMA or by copies, and completes the read with it.
      c->split_peer_serves = false;
      if (read_alone(c, reinterpret_cast<uint8_t*>(s.local) + s.front, s.len - s.front,
                     s.raddr + s.front, st.wr) != RDMX_OK)
        complete(Completion::WrError, fabric::Failure::Other, st.wr, c->user);
      if (!c->established()) return;
      continue;
    }
    if (theirs) c->split_peer_serves = true;
    complete(Completion::ReadDone, fabric::Failure::Other, st.wr, c->user);
  }
  if (oldest == UINT32_MAX || c->splits[oldest].back_claimed.load(std::memory_order_relaxed))
    return;  // none left, or the peer is copying the oldest one's back half
  uint64_t now = now_ns();
  if (c->split_oldest != c->split_state[oldest].seq) {
    c->split_oldest = c->split_state[oldest].seq;
    c->split_since_ns = now;
  }
  if (c->split_peer_serves && now - c->split_since_ns < kPeerGraceNs) return;
  if (!take_back(c, oldest)) return;
  SplitState& st = c->split_state[oldest];
  if (st.mine != c->splits[oldest].len) return;  // the peer claimed it meanwhile
  close_split(c, oldest);
  complete(Completion::ReadDone, fabric::Failure::Other, st.wr, c->user);
}

// The connection went down: split reads not yet done fail, each once the peer no
// longer copies into its buffer.
void Fabric::fail_splits(Conn* c, fabric::Failure f) {
  for (uint32_t e = 0; e < c->split_state.size() && c->splits_open; ++e) {
    SplitState& st = c->split_state[e];
    if (st.kind != SplitState::Open) continue;
    stop_peer_copy(c, e);
    close_split(c, e);
    complete(Completion::WrError, f, st.wr, c->user);
  }
}

}  // namespace rdmx::shm
