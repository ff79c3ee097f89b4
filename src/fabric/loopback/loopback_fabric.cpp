#include "fabric/loopback/loopback_fabric.h"

#include <algorithm>
#include <cstring>

#include "fabric/loopback/loopback_faults.h"
#include "rdmx/rdmx.h"

namespace rdmx::loopback {
namespace {

constexpr uint32_t kAddrMagic = 0x504f4f4c;  // "LOOP"

struct Address {
  uint32_t magic;
  uint32_t id;
  uint32_t rd_atom;
};

void update_max(std::atomic<uint64_t>& m, uint64_t v) {
  uint64_t cur = m.load(std::memory_order_relaxed);
  while (v > cur && !m.compare_exchange_weak(cur, v)) {
  }
}

// Breaks both halves of a connection, as a dropped link would.
void break_pair(Conn* c, fabric::Failure why, const char* text) {
  std::lock_guard<std::mutex> w(World::get().mu);
  Conn* p = c->peer;
  {
    std::lock_guard<SpinLock> g(c->ep->mu);
    c->ep->break_locked(c, why, text);
  }
  if (p) {
    std::lock_guard<SpinLock> g(p->ep->mu);
    p->ep->break_locked(p, fabric::Failure::Disconnected, "the peer's connection went down");
  }
}

}  // namespace

Fabric::~Fabric() {
  if (!ep_) return;
  World& w = World::get();
  std::lock_guard<std::mutex> wg(w.mu);
  w.endpoints.erase(ep_->id);
  for (auto& c : ep_->conns) {
    if (Conn* p = c->peer) {
      std::lock_guard<SpinLock> g(p->ep->mu);
      p->ep->break_locked(p, fabric::Failure::Disconnected, "the peer closed its endpoint");
      p->peer = nullptr;
      p->peer_ep.reset();
    }
    c->peer = nullptr;
    c->peer_ep.reset();
  }
  std::lock_guard<SpinLock> g(ep_->mu);
  ep_->closed = true;
}

int Fabric::open(const Settings& s, int32_t, std::string& err) {
  if (s.srq > 0 && !shared_receive_ok_) {
    err = "RDMX_SRQ=1 needs a caller that posts shared receives";
    return RDMX_ERR_UNSUPPORTED;
  }
  ep_ = std::make_shared<EpState>();
  ep_->shared = s.srq > 0;
  ep_->device_rd_atom = uint32_t(s.loopback_rd_atom);
  ep_->max_inline = uint32_t(s.loopback_max_inline);
  ep_->sends_unregistered = s.loopback_in_place != 0;
  ep_->small_unbuffered = s.loopback_unbuffered != 0;
  max_rd_atomic_ = uint32_t(s.max_rd_atomic);
  World& w = World::get();
  std::lock_guard<std::mutex> g(w.mu);
  ep_->id = w.next_id++;
  w.endpoints[ep_->id] = ep_;
  return RDMX_OK;
}

size_t Fabric::address(uint8_t* buf, size_t cap) const {
  Address a{kAddrMagic, ep_->id, ep_->device_rd_atom};
  if (cap >= sizeof a) std::memcpy(buf, &a, sizeof a);
  return sizeof a;
}

int Fabric::create_conn(const uint8_t* addr, size_t addr_len, ConnRequest* req, void* user,
                        Conn** out, std::string& err) {
  auto conn = std::make_unique<Conn>();
  conn->ep = ep_.get();
  conn->user = user;
  conn->active = req == nullptr;
  if (conn->active) {
    Address a{};
    if (addr_len != sizeof a || (std::memcpy(&a, addr, sizeof a), a.magic != kAddrMagic)) {
      err = "not a loopback address (" + std::to_string(addr_len) + " bytes)";
      return RDMX_ERR_INVALID;
    }
    if (a.rd_atom == 0) {  // no read could ever be in flight: rendezvous would hang
      err = "a loopback address with read depth 0 (at least 1 accepted)";
      return RDMX_ERR_INVALID;
    }
    conn->target_id = a.id;
    conn->target_rd_atom = a.rd_atom;
  } else if (faults().refuse_accepts.load() > 0 && faults().refuse_accepts.fetch_sub(1) > 0) {
    err = "no resources for a new connection (injected fault)";
    return RDMX_ERR_NO_MEMORY;
  }
  std::lock_guard<SpinLock> g(ep_->mu);
  conn->serial = ep_->next_serial++;
  *out = conn.get();
  ep_->conns.push_back(std::move(conn));
  return RDMX_OK;
}

int Fabric::connect(Conn* c, const void* pdata, size_t plen, std::string& err) {
  if (plen > kConnectDataMax) {
    err = "connect private data of " + std::to_string(plen) + " bytes exceeds the limit of " +
          std::to_string(kConnectDataMax);
    return RDMX_ERR_INVALID;
  }
  // What this side asks for, from the device limits on both ends (rdma_cm rules).
  uint32_t local = std::min(ep_->device_rd_atom, max_rd_atomic_);
  c->attrs.initiator_depth = std::min(local, c->target_rd_atom);
  c->attrs.responder_resources = std::min(local, c->target_rd_atom);
  World& w = World::get();
  std::lock_guard<std::mutex> wg(w.mu);
  auto it = w.endpoints.find(c->target_id);
  std::shared_ptr<EpState> peer = it == w.endpoints.end() ? nullptr : it->second.lock();
  if (!peer || peer->closed) {
    std::lock_guard<SpinLock> g(ep_->mu);
    ep_->break_locked(c, fabric::Failure::Unreachable, "no loopback endpoint at that address");
    return RDMX_OK;
  }
  auto req = std::make_unique<ConnRequest>();
  req->from = ep_;
  req->active = c;
  req->requested = c->attrs;
  std::memcpy(req->pdata, pdata, plen);  // the rest stays zero, as rdma_cm pads it
  CmEvent e{};
  e.kind = CmEvent::ConnectRequest;
  e.request = req.get();
  e.pdata_len = kConnectDataMax;
  std::memcpy(e.pdata, req->pdata, kConnectDataMax);
  std::lock_guard<SpinLock> g(peer->mu);
  peer->requests.push_back(std::move(req));
  peer->notify(std::move(e));
  return RDMX_OK;
}

int Fabric::accept(Conn* c, ConnRequest* req, const void* pdata, size_t plen, std::string& err) {
  if (plen > kAcceptDataMax) {
    err = "accept private data of " + std::to_string(plen) + " bytes exceeds " +
          std::to_string(kAcceptDataMax);
    return RDMX_ERR_INVALID;
  }
  World& w = World::get();
  std::lock_guard<std::mutex> wg(w.mu);
  Conn* a = req->active;
  // The passive side lowers the proposal to what it can do, and mirrors it.
  uint32_t local = std::min(ep_->device_rd_atom, max_rd_atomic_);
  c->attrs.initiator_depth = std::min(local, req->requested.responder_resources);
  c->attrs.responder_resources = std::min(local, req->requested.initiator_depth);
  c->attrs.max_inline = std::min(ep_->max_inline, req->from->max_inline);
  c->attrs.max_send_wr = 1u << 20;
  c->established = true;
  c->attrs.sends_unregistered = ep_->sends_unregistered;
  fabric::ConnAttrs active_attrs = c->attrs;
  std::swap(active_attrs.initiator_depth, active_attrs.responder_resources);
  active_attrs.sends_unregistered = req->from->sends_unregistered;
  bool gone;
  {
    std::lock_guard<SpinLock> g(req->from->mu);
    gone = req->from->closed || a->broken;
    if (!gone) {
      a->attrs = active_attrs;
      a->established = true;
      a->peer = c;
      a->peer_ep = ep_;
      CmEvent e{};
      e.kind = CmEvent::Established;
      e.user = a->user;
      e.attrs = active_attrs;
      e.pdata_len = kAcceptDataMax;
      std::memcpy(e.pdata, pdata, plen);
      req->from->notify(std::move(e));
    }
  }
  std::lock_guard<SpinLock> g(ep_->mu);
  if (gone) {
    ep_->break_locked(c, fabric::Failure::Disconnected, "the connecting side went away");
  } else {
    c->peer = a;
    c->peer_ep = req->from;
    CmEvent e{};
    e.kind = CmEvent::Established;
    e.user = c->user;
    e.attrs = c->attrs;
    if (uint32_t late = faults().established_late.load(std::memory_order_relaxed)) {
      e.held = c;
      e.ready_tick = ep_->tick_after(late);
    }
    ep_->notify(std::move(e));
  }
  std::erase_if(ep_->requests, [req](auto& r) { return r.get() == req; });
  return RDMX_OK;
}

void Fabric::reject(ConnRequest* req, const void* pdata, size_t plen) {
  World& w = World::get();
  std::lock_guard<std::mutex> wg(w.mu);
  {
    std::lock_guard<SpinLock> g(req->from->mu);
    Conn* a = req->active;
    if (!req->from->closed && !a->broken) {
      a->broken = true;
      CmEvent e{};
      e.kind = CmEvent::Rejected;
      e.user = a->user;
      e.pdata_len = uint32_t(std::min(plen, kAcceptDataMax));
      std::memcpy(e.pdata, pdata, e.pdata_len);
      req->from->notify(std::move(e));
    }
  }
  std::lock_guard<SpinLock> g(ep_->mu);
  std::erase_if(ep_->requests, [req](auto& r) { return r.get() == req; });
}

void Fabric::disconnect(Conn* c) {
  break_pair(c, fabric::Failure::Disconnected, "disconnected locally");
}

bool Fabric::settled(const Conn* c) const {
  std::lock_guard<SpinLock> g(ep_->mu);
  return c->broken && ep_->quiet_locked(c);
}

void Fabric::release(Conn* c) {
  std::lock_guard<SpinLock> g(ep_->mu);
  c->recvs = Ring<RecvWr>{1};
  c->user = nullptr;
}

int Fabric::reg(void* addr, size_t len, uint32_t access, Region& out, std::string&) {
  std::lock_guard<SpinLock> g(ep_->mu);
  out.key_ = (uint64_t(ep_->id) << 40) | ep_->next_key++;
  ep_->regions[out.key_] = {reinterpret_cast<uintptr_t>(addr), len, access};
  return RDMX_OK;
}

void Fabric::dereg(Region& r) {
  std::lock_guard<SpinLock> g(ep_->mu);
  ep_->regions.erase(r.key_);
  r.key_ = 0;
}

int Fabric::post_recvs(Conn* c, const fabric::RecvBuf* bufs, int n, const Region&) {
  std::lock_guard<SpinLock> g(ep_->mu);
  for (int i = 0; i < n; ++i) {
    if (c->broken)
      ep_->complete(
          {Completion::WrError, false, fabric::Failure::Flushed, 0, bufs[i].wr, 0, c->user, c, {}});
    else
      c->recvs.push({bufs[i].addr, bufs[i].len, bufs[i].wr});
  }
  return RDMX_OK;
}

int Fabric::post_shared_recv(void* buf, uint32_t len, const Region&, uint64_t wr) {
  std::lock_guard<SpinLock> g(ep_->mu);
  while (!ep_->parked.empty() && ep_->parked.front().conn->broken) ep_->parked.pop();
  if (ep_->parked.empty()) {
    ep_->shared_recvs.push({buf, len, wr});
    return RDMX_OK;
  }
  EpState::Parked m = ep_->parked.pop();
  uint32_t n = uint32_t(std::min<size_t>(m.data.size(), len));
  std::memcpy(buf, m.data.data(), n);
  ep_->complete(
      {Completion::Recv, false, fabric::Failure::Other, n, wr, 0, m.conn->user, m.conn, {}});
  return RDMX_OK;
}

int Fabric::send(Conn* c, const fabric::Sge* sge, int n, uint32_t flags, uint64_t wr) {
  uint64_t total = 0;
  for (int i = 0; i < n; ++i) total += sge[i].len;
  if ((flags & fabric::kSendInline) && total > c->attrs.max_inline) return RDMX_ERR_INVALID;
  Faults& f = faults();
  int64_t nth = f.sends_posted.fetch_add(1, std::memory_order_relaxed) + 1;
  fabric::Failure fail = fabric::Failure::Other;
  bool ok = false;
  // The SEND's pieces laid end to end where they land, and the injected corruption of
  // the landed bytes when this is the send it names.
  auto gather = [&](uint8_t* dst) {
    for (int i = 0; i < n; ++i) {
      std::memcpy(dst, sge[i].addr, sge[i].len);
      dst += sge[i].len;
    }
  };
  auto corrupt = [&](uint8_t* dst) {
    if (nth != f.corrupt_at_send.load(std::memory_order_relaxed)) return;
    for (uint64_t i = f.corrupt_offset; i < total && i < f.corrupt_offset + f.corrupt_len; ++i)
      dst[i] = f.corrupt_fill ? f.corrupt_xor.load() : uint8_t(dst[i] ^ f.corrupt_xor);
  };
  if (nth == f.error_at_send.load(std::memory_order_relaxed)) {
    fail = fabric::Failure::RetryExceeded;
  } else {
    std::shared_ptr<EpState> pe;
    Conn* p;
    {
      std::lock_guard<SpinLock> g(ep_->mu);
      pe = c->peer_ep;
      p = c->peer;
    }
    if (!pe || !p) {
      fail = fabric::Failure::Flushed;
    } else {
      std::lock_guard<SpinLock> g(pe->mu);
      if (p->broken || c->broken) {
        fail = fabric::Failure::Flushed;
      } else if (pe->shared && pe->shared_recvs.empty()) {
        EpState::Parked m{p, std::vector<uint8_t>(total)};
        gather(m.data.data());
        pe->parked.push(std::move(m));
        ok = true;
      } else if (!pe->shared && pe->small_unbuffered && total <= Completion::kUnbufferedMax) {
        Completion u{Completion::RecvUnbuffered,
                     false,
                     fabric::Failure::Other,
                     uint32_t(total),
                     0,
                     0,
                     p->user,
                     p,
                     {}};
        gather(u.data);
        corrupt(u.data);
        pe->complete(u);
        ok = true;
      } else if (!pe->shared && p->recvs.empty()) {
        fail = fabric::Failure::RnrRetryExceeded;  // a credit bug: RNR with rnr_retry 0
      } else {
        RecvWr r = pe->shared ? pe->shared_recvs.pop() : p->recvs.pop();
        if (total > r.len) {
          pe->complete({Completion::WrError,
                        false,
                        fabric::Failure::LocalLength,
                        0,
                        r.wr,
                        0,
                        p->user,
                        p,
                        {}});
          fail = fabric::Failure::RemoteAccess;
        } else {
          gather(static_cast<uint8_t*>(r.buf));
          corrupt(static_cast<uint8_t*>(r.buf));
          pe->complete({Completion::Recv,
                        false,
                        fabric::Failure::Other,
                        uint32_t(total),
                        r.wr,
                        0,
                        p->user,
                        p,
                        {}});
          ok = true;
        }
      }
    }
  }
  if (ok) {
    if (flags & fabric::kSendSignaled) {
      std::lock_guard<SpinLock> g(ep_->mu);
      ep_->complete(
          {Completion::SendDone, false, fabric::Failure::Other, 0, wr, 0, c->user, c, {}});
    }
  } else {
    {
      std::lock_guard<SpinLock> g(ep_->mu);
      ep_->complete({Completion::WrError, false, fail, 0, wr, 0, c->user, c, {}});
    }
    if (fail != fabric::Failure::Flushed) break_pair(c, fail, fabric::failure_name(fail));
  }
  return RDMX_OK;
}

int Fabric::read(Conn* c, void* local, uint64_t len, const Region&, uint64_t raddr, uint64_t rkey,
                 uint64_t wr) {
  Faults& f = faults();
  int64_t nth = f.reads_posted.fetch_add(1, std::memory_order_relaxed) + 1;
  std::shared_ptr<EpState> pe;
  Conn* p;
  {
    std::lock_guard<SpinLock> g(ep_->mu);
    pe = c->peer_ep;
    p = c->peer;
    ++c->reads_in_flight;
    update_max(f.max_reads_in_flight, c->reads_in_flight);
    if (c->reads_in_flight > c->attrs.initiator_depth) f.depth_violations.fetch_add(1);
  }
  if (nth == f.drop_at_read.load(std::memory_order_relaxed)) {
    break_pair(c, fabric::Failure::RetryExceeded, "connection dropped (injected fault)");
    std::lock_guard<SpinLock> g(ep_->mu);
    ep_->complete({Completion::WrError, true, fabric::Failure::Flushed, 0, wr, 0, c->user, c, {}});
    return RDMX_OK;
  }
  fabric::Failure fail = fabric::Failure::Other;
  bool ok = false;
  if (!pe || c->broken) {
    fail = fabric::Failure::Flushed;
  } else {
    std::lock_guard<SpinLock> g(pe->mu);
    auto it = pe->regions.find(rkey);
    if (p == nullptr || p->broken) {
      fail = fabric::Failure::Flushed;
    } else if (it == pe->regions.end() || !(it->second.access & fabric::kRemoteRead) ||
               raddr < it->second.addr || raddr - it->second.addr > it->second.len ||
               len > it->second.len - (raddr - it->second.addr)) {  // no sum may wrap
      fail = fabric::Failure::RemoteAccess;
    } else {
      std::memcpy(local, reinterpret_cast<const void*>(raddr), len);
      ok = true;
    }
  }
  {
    std::lock_guard<SpinLock> g(ep_->mu);
    ep_->complete({ok ? Completion::ReadDone : Completion::WrError,
                   true,
                   fail,
                   uint32_t(0),
                   wr,
                   0,
                   c->user,
                   c,
                   {}});
  }
  if (!ok && fail != fabric::Failure::Flushed) break_pair(c, fail, fabric::failure_name(fail));
  return RDMX_OK;
}

}  // namespace rdmx::loopback
