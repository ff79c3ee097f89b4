// READs on the shared-memory fabric. Across memory (process_vm_readv): one system call
// copies straight from the peer's buffer, no work for the peer. By copies, where the
// kernel forbids that: the reader asks for one staging slot's worth at a time, the
// peer's progress checks the range against what it registered for remote reads and
// copies it into the reader's staging area, and the reader copies it out; with several
// slots the two copies overlap.
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "fabric/shm/shm_fabric.h"
#include "fabric/shm/shm_faults.h"

namespace rdmx::shm {

int Fabric::read(Conn* c, void* local, uint64_t len, const Region&, uint64_t raddr, uint64_t,
                 uint64_t wr) {
  if (!c->established()) {
    complete(Completion::WrError, fabric::Failure::Flushed, wr, c->user);
    return RDMX_OK;
  }
  if (c->cma && split_min_ && len >= split_min_ &&
      split_read(c, static_cast<uint8_t*>(local), len, raddr, wr))
    return RDMX_OK;
  return read_alone(c, local, len, raddr, wr);
}

int Fabric::read_alone(Conn* c, void* local, uint64_t len, uint64_t raddr, uint64_t wr) {
  if (c->cma) {
    fabric::Failure f = fabric::Failure::Other;
    if (cma_read(c, local, len, raddr, f)) {
      complete(Completion::ReadDone, fabric::Failure::Other, wr, c->user);
      return RDMX_OK;
    }
    if (f != fabric::Failure::Other) {
      complete(Completion::WrError, f, wr, c->user);
      break_conn(c, f,
                 f == fabric::Failure::RemoteAccess
                     ? "the peer's buffer is not readable at that address"
                     : "the local peer is gone");
      return RDMX_OK;
    }
    c->cma = false;  // refused now (a policy changed): copies from here on
  }
  if (std::string why; !c->staging_reserved && !reserve_staging(c, why)) {
    complete(Completion::WrError, fabric::Failure::Other, wr, c->user);
    break_conn(c, fabric::Failure::Other, why);
    return RDMX_OK;
  }
  if (c->free_reads.empty()) {
    if (c->reads.size() >= 1024) return RDMX_ERR_NO_MEMORY;  // past any initiator depth
    c->reads.push_back({});
    c->free_reads.push_back(uint32_t(c->reads.size() - 1));
  }
  uint32_t id = c->free_reads.back();
  c->free_reads.pop_back();
  c->reads[id] = {static_cast<uint8_t*>(local), raddr, len, 0, 0, wr, false};
  c->read_queue.push(id);
  if (len == 0) {
    c->read_queue.pop();
    c->free_reads.push_back(id);
    complete(Completion::ReadDone, fabric::Failure::Other, wr, c->user);
    return RDMX_OK;
  }
  issue_pieces(c);
  return RDMX_OK;
}

// This side's staging area, where the peer copies what a copy read asks for, is
// allocated on the first such read: most connections never read by copies. A full
// memory limit then fails the read and the connection with a reason, never a SIGBUS
// in the peer.
bool Fabric::reserve_staging(Conn* c, std::string& why) {
  const SegmentHeader& h = *c->in_h;
  size_t len = size_t(h.staging_slots) * h.staging_slot_len;
  int e = faults().staging_refused.load(std::memory_order_relaxed)
              ? ENOMEM
              : c->in.populate(h.staging_off, len);
  if (e != 0 && e != EINVAL) {
    why = "reserving " + std::to_string(len) +
          " bytes of shared memory for copy reads failed: " + std::strerror(e) +
          " (the memory or tmpfs limit of this host or container is reached)";
    return false;
  }
  c->staging_reserved = true;
  return true;
}

// Returns true once len bytes are read. On false, f is RemoteAccess (no such memory in
// the peer), Flushed (the peer is gone), or Other (not permitted: copy instead).
bool Fabric::cma_read(Conn* c, void* local, uint64_t len, uint64_t raddr, fabric::Failure& f) {
  auto* dst = static_cast<uint8_t*>(local);
  uint64_t done = 0;
  if (faults().cma_read_refused.load(std::memory_order_relaxed)) [[unlikely]]
    return f = fabric::Failure::Other, false;
  while (done < len) {
    iovec l{dst + done, len - done}, r{reinterpret_cast<void*>(raddr + done), len - done};
    ssize_t n = ::process_vm_readv(c->pid, &l, 1, &r, 1, 0);
    if (n > 0) {
      done += uint64_t(n);
      continue;
    }
    if (n == 0 || errno == EFAULT || errno == EINVAL)
      f = fabric::Failure::RemoteAccess;
    else if (errno == ESRCH)
      f = fabric::Failure::Flushed;
    else
      f = done == 0 ? fabric::Failure::Other : fabric::Failure::RemoteAccess;
    return false;
  }
  return true;
}

void Fabric::issue_pieces(Conn* c) {
  const uint32_t slot_len = c->in_h->staging_slot_len;
  bool pushed = false;
  while (!c->read_queue.empty() && !c->free_slots.empty() && !c->peer_reads.full()) {
    uint32_t id = c->read_queue.front();
    CopyRead& r = c->reads[id];
    uint32_t piece = uint32_t(std::min<uint64_t>(slot_len, r.len - r.issued));
    uint32_t slot = c->free_slots.back();
    c->free_slots.pop_back();
    c->slot_read[slot] = id;
    c->slot_offset[slot] = r.issued;
    c->peer_reads.push({r.raddr + r.issued, piece, slot});
    pushed = true;
    r.issued += piece;
    if (r.issued == r.len) c->read_queue.pop();
  }
  if (pushed) wake_peer(c);
}

// The peer asks for pieces of this side's memory: each must lie in a region registered
// for remote reads, and fit the peer's staging slot.
void Fabric::serve_reads(Conn* c) {
  const SegmentHeader& o = c->out_layout;
  bool pushed = false;
  while (!c->read_reqs.empty() && !c->peer_arrivals.full()) {
    ReadRequest q = c->read_reqs.pop();
    bool ok = q.slot < o.staging_slots && q.len <= o.staging_slot_len;
    ok = ok && readable(q.raddr, q.len);
    if (ok)
      std::memcpy(c->out.base() + o.staging_off + uint64_t(q.slot) * o.staging_slot_len,
                  reinterpret_cast<const void*>(q.raddr), q.len);
    Arrival& a = c->peer_arrivals.next();
    a.kind = ok ? Arrival::ReadPiece : Arrival::ReadPieceFailed;
    a.buf = {q.len, q.slot};
    c->peer_arrivals.commit(a);
    pushed = true;
  }
  if (pushed) wake_peer(c);
}

bool Fabric::readable(uint64_t addr, uint64_t len) const {
  for (auto it = regions_.upper_bound(uintptr_t(addr)); it != regions_.begin();) {
    --it;
    uint64_t off = addr - it->first;
    if (off <= it->second.len && len <= it->second.len - off) return true;
  }
  return false;
}

// An arrival that is not a message into a posted buffer: a read piece, or a broken
// promise of the peer's.
void Fabric::bad_arrival(Conn* c, const Arrival& a) {
  if (a.kind == Arrival::ReadPiece || a.kind == Arrival::ReadPieceFailed) return on_piece(c, a);
  if (a.kind != Arrival::Recv) {
    break_conn(c, fabric::Failure::Other,
               a.kind == Arrival::RecvInline
                   ? "the peer sent an inline message of " + std::to_string(a.inline_len) +
                         " bytes (an arrival holds at most " + std::to_string(Arrival::kInlineMax) +
                         ")"
                   : "the peer wrote an arrival of unknown kind " + std::to_string(a.kind));
    return;
  }
  bool known = a.buf.token < c->tokens.size() && c->tokens[a.buf.token].live;
  break_conn(c, known ? fabric::Failure::LocalLength : fabric::Failure::Other,
             known ? "the peer overran a receive buffer"
                   : "the peer reported a receive buffer it was not given");
}

// A piece this side asked for has arrived in its staging area (or was refused).
void Fabric::on_piece(Conn* c, const Arrival& a) {
  const SegmentHeader& h = *c->in_h;
  if (a.buf.token >= h.staging_slots || c->slot_read[a.buf.token] < 0) {
    break_conn(c, fabric::Failure::Other, "the peer answered a read that was not asked for");
    return;
  }
  uint32_t slot = a.buf.token;
  CopyRead& r = c->reads[size_t(c->slot_read[slot])];
  uint32_t id = uint32_t(c->slot_read[slot]);
  uint64_t off = c->slot_offset[slot];
  c->slot_read[slot] = -1;
  c->free_slots.push_back(slot);
  uint32_t expect = uint32_t(std::min<uint64_t>(h.staging_slot_len, r.len - off));
  if (a.kind != Arrival::ReadPiece || a.buf.len != expect) {
    complete(Completion::WrError, fabric::Failure::RemoteAccess, r.wr, c->user);
    r.failed = true;
    break_conn(c, fabric::Failure::RemoteAccess,
               "the peer refused a read: the range is not registered for remote reads");
    return;
  }
  std::memcpy(r.local + off, c->in.base() + h.staging_off + uint64_t(slot) * h.staging_slot_len,
              a.buf.len);
  r.done += a.buf.len;
  if (r.done == r.len) {
    complete(Completion::ReadDone, fabric::Failure::Other, r.wr, c->user);
    c->free_reads.push_back(id);
  }
  issue_pieces(c);
}

// The connection went down: every copy read not yet done fails (flushed).
void Fabric::fail_copy_reads(Conn* c, fabric::Failure f) {
  std::vector<bool> open(c->reads.size(), true);
  for (uint32_t id : c->free_reads) open[id] = false;
  for (size_t id = 0; id < c->reads.size(); ++id)
    if (open[id] && !c->reads[id].failed)
      complete(Completion::WrError, f, c->reads[id].wr, c->user);
  for (size_t id = 0; id < c->reads.size(); ++id)
    if (open[id]) c->free_reads.push_back(uint32_t(id));
  c->read_queue.clear();
  std::fill(c->slot_read.begin(), c->slot_read.end(), -1);
}

}  // namespace rdmx::shm
