// The verbs backend's setup, memory registration, data path and teardown. Connection
// management is in verbs_cm.cpp, rdma_cm events in verbs_events.cpp, queue pairs in
// verbs_qp.cpp.
#include "fabric/verbs/verbs_fabric.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "core/log.h"
#include "topology/software_device.h"

namespace rdmx::verbs {

int Fabric::open(const Settings& s, int32_t rank, std::string& err) {
  rank_ = rank;
  if (s.srq > 0 && !shared_receive_ok_) {
    err =
        "RDMX_SRQ=1: the verbs backend supports a shared receive queue, but this engine posts "
        "its receive buffers per connection; use RDMX_SRQ=0";
    return RDMX_ERR_UNSUPPORTED;
  }
  if (int rc = dev_.open(s, err)) return rc;
  async_events::subscribe(dev_.context(), this);
  async_subscribed_ = true;
  const DeviceLimits& lim = dev_.limits();
  init_cap_ = std::min<uint32_t>(lim.max_qp_init_rd_atom, uint32_t(s.max_rd_atomic));
  resp_cap_ = std::min<uint32_t>(lim.max_qp_rd_atom, uint32_t(s.max_rd_atomic));
  if (init_cap_ == 0 || resp_cap_ == 0) {
    err = dev_.name() + " cannot serve RDMA READs (max_qp_rd_atom " +
          std::to_string(lim.max_qp_rd_atom) + ", max_qp_init_rd_atom " +
          std::to_string(lim.max_qp_init_rd_atom) + "); rdmx's rendezvous needs them";
    return RDMX_ERR_NO_DEVICE;
  }
  software_ = topology::is_software_rdma_device(dev_.name());
  retry_count_ = uint8_t(s.retry_count);
  rnr_retry_ = s.effective_rnr_retry();
  flow_control_ = s.flow_control != 0;
  use_srq_ = dev_.srq() != nullptr;
  // Address and route resolution each get half of the whole connection's time.
  resolve_timeout_ms_ = int(std::clamp<uint64_t>(s.connect_timeout_ms / 2, 100, 1800000));
  // 255, not 256: devices round a queue up to a power of two, and rxe keeps a slot of it
  // empty, so that 256 asked for takes 512 slots (256 KiB a queue pair).
  sq_depth_ = std::min<uint32_t>(255, lim.max_qp_wr);
  rq_depth_ = std::min<uint32_t>(fabric::max_credits(s) + 16, lim.max_qp_wr);
  if (use_srq_) shared_slots_.init(dev_.srq_depth(), nullptr);
  RDMX_LOG(LogLevel::Info, rank_,
           "verbs: %s port %u, listening on %s; max_qp_rd_atom %u, max_qp_init_rd_atom %u, "
           "MTU %u, read depth cap %u/%u, retry %u, rnr retry %u, flow control %d, srq %d%s",
           dev_.name().c_str(), unsigned(dev_.listener()->port_num),
           format_address(dev_.local_address()).c_str(), lim.max_qp_rd_atom,
           lim.max_qp_init_rd_atom, lim.mtu, init_cap_, resp_cap_, unsigned(retry_count_),
           unsigned(rnr_retry_), int(flow_control_), int(use_srq_),
           software_ ? ", a software device" : "");
  return RDMX_OK;
}

Fabric::~Fabric() {
  if (async_subscribed_) async_events::unsubscribe(dev_.context(), this);
  if (!dev_.cq()) return;
  // Disconnect, drain, destroy: every connection is told to end and its queue pair
  // flushed; the flushes are collected for a bounded time; then queue pairs and ids go,
  // and the device's objects after them (member order).
  for (auto& c : conns_)
    if (!c->reaped) close(c.get());
  auto busy = [&] {
    for (auto& c : conns_)
      if (!c->reaped && c->slots.in_use()) return true;
    return false;
  };
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  while (busy() && std::chrono::steady_clock::now() < deadline) {
    ibv_wc wc[32];
    int n = ibv_poll_cq(dev_.cq(), 32, wc);
    if (n < 0) break;
    for (int i = 0; i < n; ++i) {
      Slot* s = reinterpret_cast<Slot*>(wc[i].wr_id);
      if (s->op == Slot::SharedRecv)
        shared_slots_.give(s);
      else
        s->conn->slots.give(s);
    }
  }
  incoming_.id.reset();
  by_qp_num_.clear();
  for (auto& c : conns_) {
    c->qp.reset();
    c->id.reset();
  }
  conns_.clear();
}

size_t Fabric::address(uint8_t* buf, size_t cap) const {
  WireAddress a = dev_.wire_address();
  if (buf && cap >= sizeof a) std::memcpy(buf, &a, sizeof a);
  return sizeof a;
}

int Fabric::reg(void* addr, size_t len, uint32_t access, Region& out, std::string& err) {
  if (!addr || len == 0) {
    err = "cannot register an empty buffer";
    return RDMX_ERR_INVALID;
  }
  int flags = 0;
  if (access & fabric::kLocalWrite) flags |= IBV_ACCESS_LOCAL_WRITE;
  if (access & fabric::kRemoteRead) flags |= IBV_ACCESS_REMOTE_READ;
  ibv_mr* mr = ibv_reg_mr(dev_.pd(), addr, len, flags);
  if (!mr) {
    int e = errno;
    err = "ibv_reg_mr of " + std::to_string(len) + " bytes on " + dev_.name() +
          " failed: " + std::strerror(e) + (e == ENOMEM || e == EPERM ? " (ulimit -l?)" : "");
    return RDMX_ERR_NO_MEMORY;
  }
  out.mr_.reset(mr);
  return RDMX_OK;
}

// A batch of receives as one chain of work requests: one doorbell for all of them.
int Fabric::post_recvs(Conn* c, const fabric::RecvBuf* bufs, int n, const Region& r) {
  if (use_srq_) {
    for (int i = 0; i < n; ++i)
      if (int rc = post_shared_recv(bufs[i].addr, bufs[i].len, r, bufs[i].wr)) return rc;
    return RDMX_OK;
  }
  if (!c->qp) return RDMX_ERR_PEER_LOST;
  constexpr int kChain = 16;
  for (int done = 0; done < n;) {
    int k = std::min(kChain, n - done);
    ibv_sge sge[kChain];
    ibv_recv_wr w[kChain];
    Slot* slots[kChain];
    for (int i = 0; i < k; ++i) {
      const fabric::RecvBuf& b = bufs[done + i];
      slots[i] = c->slots.take(Slot::Recv, b.wr);
      if (!slots[i]) {
        for (int j = 0; j < i; ++j) c->slots.give(slots[j]);
        return RDMX_ERR_AGAIN;
      }
      sge[i] = {reinterpret_cast<uintptr_t>(b.addr), b.len, r.lkey()};
      w[i] = {};
      w[i].wr_id = reinterpret_cast<uintptr_t>(slots[i]);
      w[i].sg_list = &sge[i];
      w[i].num_sge = 1;
      w[i].next = i + 1 < k ? &w[i + 1] : nullptr;
    }
    ibv_recv_wr* bad = nullptr;
    if (ibv_post_recv(c->qp.get(), w, &bad)) {
      for (int i = bad ? int(bad - w) : 0; i < k; ++i) c->slots.give(slots[i]);  // not posted
      return RDMX_ERR_FABRIC;
    }
    done += k;
  }
  return RDMX_OK;
}

int Fabric::post_shared_recv(void* buf, uint32_t len, const Region& r, uint64_t wr) {
  if (!dev_.srq()) return RDMX_ERR_INVALID;
  Slot* s = shared_slots_.take(Slot::SharedRecv, wr);
  if (!s) return RDMX_ERR_AGAIN;
  ibv_sge sge{reinterpret_cast<uintptr_t>(buf), len, r.lkey()};
  ibv_recv_wr w{};
  w.wr_id = reinterpret_cast<uintptr_t>(s);
  w.sg_list = &sge;
  w.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  if (ibv_post_srq_recv(dev_.srq(), &w, &bad)) {
    shared_slots_.give(s);
    return RDMX_ERR_FABRIC;
  }
  return RDMX_OK;
}

int Fabric::arm_shared_receive_limit(uint32_t n) {
  if (!dev_.srq()) return RDMX_ERR_INVALID;
  ibv_srq_attr a{};
  a.srq_limit = n;
  if (int e = ibv_modify_srq(dev_.srq(), &a, IBV_SRQ_LIMIT)) {
    RDMX_LOG(LogLevel::Info, rank_, "verbs: ibv_modify_srq(IBV_SRQ_LIMIT %u) on %s failed: %s", n,
             dev_.name().c_str(), std::strerror(e));
    return RDMX_ERR_UNSUPPORTED;
  }
  return RDMX_OK;
}

int Fabric::send(Conn* c, const fabric::Sge* sge, int n, uint32_t flags, uint64_t wr) {
  bool inline_data = flags & fabric::kSendInline;
  if (!c->qp) return RDMX_ERR_PEER_LOST;
  if (n < 1 || n > 3 || uint32_t(n) > c->attrs.max_sge) {
    RDMX_LOG(LogLevel::Debug, rank_, "verbs: a SEND in %d pieces (max %u)", n, c->attrs.max_sge);
    return RDMX_ERR_INVALID;
  }
  ibv_sge s[3];
  uint64_t total = 0;
  for (int i = 0; i < n; ++i) {
    s[i].addr = reinterpret_cast<uintptr_t>(sge[i].addr);
    s[i].length = sge[i].len;
    s[i].lkey = sge[i].desc ? static_cast<const ibv_mr*>(sge[i].desc)->lkey : 0;
    total += sge[i].len;
  }
  if (inline_data && total > c->attrs.max_inline) {
    RDMX_LOG(LogLevel::Debug, rank_, "verbs: an inline SEND of %u bytes (max %u)", unsigned(total),
             c->attrs.max_inline);
    return RDMX_ERR_INVALID;
  }
  // An unsignaled send takes no slot: it only completes (in error) if it fails, and
  // then points at the connection's shared unsignaled slot.
  bool signaled = flags & fabric::kSendSignaled;
  Slot* slot = signaled ? c->slots.take(Slot::Send, wr) : c->slots.unsignaled(wr);
  if (!slot) {
    RDMX_LOG(LogLevel::Debug, rank_, "verbs: no send slot left (%u in use)", c->slots.in_use());
    return RDMX_ERR_AGAIN;
  }
  ibv_send_wr w{};
  w.wr_id = reinterpret_cast<uintptr_t>(slot);
  w.sg_list = s;
  w.num_sge = n;
  w.opcode = IBV_WR_SEND;
  w.send_flags = (signaled ? IBV_SEND_SIGNALED : 0) | (inline_data ? IBV_SEND_INLINE : 0);
  ibv_send_wr* bad = nullptr;
  if (int e = ibv_post_send(c->qp.get(), &w, &bad)) {
    c->slots.give(slot);
    RDMX_LOG(LogLevel::Debug, rank_, "verbs: posting a SEND of %u bytes in %d pieces to %s: %s",
             unsigned(total), n, c->peer.c_str(), std::strerror(e));
    return RDMX_ERR_FABRIC;
  }
  c->unsignaled_tail = signaled ? 0 : c->unsignaled_tail + 1;
  return RDMX_OK;
}

int Fabric::read(Conn* c, void* local, uint64_t len, const Region& r, uint64_t raddr, uint64_t rkey,
                 uint64_t wr) {
  if (!c->qp) return RDMX_ERR_PEER_LOST;
  if (len == 0 || len > UINT32_MAX || len > dev_.limits().max_msg_size) return RDMX_ERR_INVALID;
  Slot* slot = c->slots.take(Slot::Read, wr);
  if (!slot) return RDMX_ERR_AGAIN;
  ibv_sge sge{reinterpret_cast<uintptr_t>(local), uint32_t(len), r.lkey()};
  ibv_send_wr w{};
  w.wr_id = reinterpret_cast<uintptr_t>(slot);
  w.sg_list = &sge;
  w.num_sge = 1;
  w.opcode = IBV_WR_RDMA_READ;
  w.send_flags = IBV_SEND_SIGNALED;
  w.wr.rdma.remote_addr = raddr;
  w.wr.rdma.rkey = uint32_t(rkey);
  ibv_send_wr* bad = nullptr;
  if (ibv_post_send(c->qp.get(), &w, &bad)) {
    c->slots.give(slot);
    return RDMX_ERR_FABRIC;
  }
  c->unsignaled_tail = 0;
  return RDMX_OK;
}

fabric::Failure Fabric::failure_of(ibv_wc_status s) {
  switch (s) {
    case IBV_WC_WR_FLUSH_ERR: return fabric::Failure::Flushed;
    case IBV_WC_RETRY_EXC_ERR: return fabric::Failure::RetryExceeded;
    case IBV_WC_RNR_RETRY_EXC_ERR: return fabric::Failure::RnrRetryExceeded;
    case IBV_WC_REM_ACCESS_ERR: return fabric::Failure::RemoteAccess;
    case IBV_WC_LOC_LEN_ERR: return fabric::Failure::LocalLength;
    default: return fabric::Failure::Other;
  }
}

void Fabric::fill_why(Conn* c, fabric::Failure f, Slot::Op op, const ibv_wc& wc) {
  // The first error names its cause: on a completion queue shared by the send and
  // receive queues, a receive's flush may come before the send-side error behind it.
  const char* what = Slot::name(op);
  if (c->remote_gone)
    std::snprintf(c->why, sizeof c->why, "%s", c->gone_why.c_str());
  else
    std::snprintf(c->why, sizeof c->why, "%s: %s (%s, vendor error 0x%x) with %s", what,
                  fabric::failure_name(f), ibv_wc_status_str(wc.status), wc.vendor_err,
                  c->peer.c_str());
}

}  // namespace rdmx::verbs
