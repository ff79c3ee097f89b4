// The data path: receives, sends (injected when they fit the provider's inject size),
// RDMA READs, and the completion queue. Nothing here allocates or locks: operations
// take preallocated slots, and errors are described into a fixed buffer.
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstdio>

#include "core/log.h"
#include "fabric/ofi/ofi_fabric.h"
#include "rdmx/rdmx.h"

namespace rdmx::ofi {
namespace {

fabric::Failure wr_failure(int err) {
  switch (err) {
    case FI_ECANCELED: return fabric::Failure::Flushed;
    case FI_ETIMEDOUT: return fabric::Failure::RetryExceeded;
    case FI_EACCES:
    case FI_EPERM:
    case FI_EKEYREJECTED: return fabric::Failure::RemoteAccess;
    case FI_ETRUNC:
    case FI_ETOOSMALL:
    case FI_EMSGSIZE: return fabric::Failure::LocalLength;
    case FI_ECONNRESET:
    case FI_ECONNABORTED:
    case FI_ENOTCONN:
    case EPIPE:
    case FI_ESHUTDOWN: return fabric::Failure::Disconnected;
    case FI_EHOSTUNREACH:
    case FI_ENETUNREACH:
    case FI_ECONNREFUSED: return fabric::Failure::Unreachable;
    case FI_ENODEV: return fabric::Failure::DeviceRemoved;
    default: return fabric::Failure::Other;
  }
}

const char* op_name(Op::Kind k) {
  switch (k) {
    case Op::Recv:
    case Op::SharedRecv: return "receive";
    case Op::Send: return "send";
    case Op::Read: return "RDMA READ";
  }
  return "operation";
}

int post_error(ssize_t rc) {
  if (rc == -FI_EAGAIN) return RDMX_ERR_AGAIN;
  if (rc == -FI_ENOTCONN || rc == -FI_ECONNRESET || rc == -EPIPE || rc == -FI_ESHUTDOWN)
    return RDMX_ERR_PEER_LOST;
  return RDMX_ERR_FABRIC;
}

}  // namespace

int Fabric::post_recv(Conn* c, void* buf, uint32_t len, const Region& r, uint64_t wr) {
  if (!c->ep) {
    deferred_.push({Completion::WrError, fabric::Failure::Flushed, 0, wr, c->user,
                    "the connection is closed"});
    return RDMX_OK;
  }
  Op* op = c->rx.take();
  if (!op) return RDMX_ERR_AGAIN;
  op->wr = wr;
  op->kind = Op::Recv;
  ssize_t rc = fi_recv(c->ep.get(), buf, len, const_cast<void*>(r.desc()), 0, &op->ctx);
  if (rc) {
    c->rx.give(op);
    return post_error(rc);
  }
  return RDMX_OK;
}

int Fabric::post_recvs(Conn* c, const fabric::RecvBuf* bufs, int n, const Region& r) {
  for (int i = 0; i < n; ++i)
    if (int rc = post_recv(c, bufs[i].addr, bufs[i].len, r, bufs[i].wr)) return rc;
  return RDMX_OK;
}

// A signaled send, or one from registered memory, takes an operation slot, recycled
// when it is reported. With selective completion an unsignaled inline send is not
// reported (its data was copied at post time) and takes no slot; without, every send
// is reported (fabric.h allows it).
int Fabric::send(Conn* c, const fabric::Sge* sge, int n, uint32_t flags, uint64_t wr) {
  bool inline_data = flags & fabric::kSendInline;
  if (n < 1 || n > kMaxSge) return RDMX_ERR_INVALID;
  if (!c->ep || c->state != Conn::State::Up) return RDMX_ERR_PEER_LOST;
  iovec iov[kMaxSge];
  void* desc[kMaxSge];
  uint64_t total = 0;
  bool described = false;
  for (int i = 0; i < n; ++i) {
    iov[i].iov_base = const_cast<void*>(sge[i].addr);
    iov[i].iov_len = sge[i].len;
    desc[i] = const_cast<void*>(sge[i].desc);
    described |= desc[i] != nullptr;
    total += sge[i].len;
  }
  if (inline_data && total > attrs_.max_inline) return RDMX_ERR_INVALID;
  bool report = !selective_ || !inline_data || (flags & fabric::kSendSignaled);
  Op* op = report ? c->tx.take() : &c->unreported;
  if (!op) return RDMX_ERR_AGAIN;
  op->wr = wr;
  op->kind = Op::Send;
  fi_msg msg{};
  msg.msg_iov = iov;
  msg.desc = described ? desc : nullptr;  // some providers read every entry of an array
  msg.iov_count = size_t(n);
  msg.context = &op->ctx;
  msg.data = c->peer_tag;
  ssize_t rc = fi_sendmsg(c->ep.get(), &msg,
                          (report ? FI_COMPLETION : 0) | (inline_data ? FI_INJECT : 0) |
                              (c->peer_tag ? FI_REMOTE_CQ_DATA : 0));
  if (rc) {
    c->tx.give(op);
    return post_error(rc);
  }
  return RDMX_OK;
}

int Fabric::read(Conn* c, void* local, uint64_t len, const Region& r, uint64_t raddr, uint64_t rkey,
                 uint64_t wr) {
  if (!c->ep || c->state != Conn::State::Up) return RDMX_ERR_PEER_LOST;
  if (len > attrs_.max_msg_size) return RDMX_ERR_INVALID;
  Op* op = c->tx.take();
  if (!op) return RDMX_ERR_AGAIN;
  op->wr = wr;
  op->kind = Op::Read;
  iovec iov{local, len};
  void* desc = const_cast<void*>(r.desc());
  fi_rma_iov rma{raddr, len, rkey};
  fi_msg_rma msg{};
  msg.msg_iov = &iov;
  msg.desc = &desc;
  msg.iov_count = 1;
  msg.rma_iov = &rma;
  msg.rma_iov_count = 1;
  msg.context = &op->ctx;
  ssize_t rc = fi_readmsg(c->ep.get(), &msg, FI_COMPLETION);
  if (rc) {
    c->tx.give(op);
    return post_error(rc);
  }
  return RDMX_OK;
}

int Fabric::poll_cq(Completion* out, int max) {
  int n = 0;
  while (n < max && !deferred_.empty()) out[n++] = deferred_.pop();
  if (n == max) return n;
  fi_cq_data_entry e[kBatch];
  ssize_t got = fi_cq_read(cq_.get(), e, size_t(max - n));
  for (ssize_t i = 0; i < got; ++i) {
    auto* op = reinterpret_cast<Op*>(e[i].op_context);
    if (!op || !op->live) continue;  // reported as flushed when its connection closed
    Conn* c = op->conn;
    if (op->kind == Op::SharedRecv) {
      c = sender_of(e[i].flags, e[i].data);
      if (!c) {
        RDMX_LOG(LogLevel::Warn, rank_,
                 "ofi: dropped a message of %zu bytes in the shared receive context that names "
                 "no connection here (remote CQ data %s%llx)",
                 e[i].len, (e[i].flags & FI_REMOTE_CQ_DATA) ? "0x" : "none, ",
                 static_cast<unsigned long long>(e[i].data));
        repost_stray(op);
        continue;
      }
      shared_.give(op);  // the buffer is the engine's until it posts it again
    }
    if ((op->kind == Op::Recv || op->kind == Op::SharedRecv) &&
        c->state == Conn::State::Accepting) {
      // A message that overtook the established event (rdma_cm may report it later).
      c->early.push(
          {Completion::Recv, fabric::Failure::Other, uint32_t(e[i].len), op->wr, c->user, ""});
      if (op->kind == Op::Recv) c->rx.give(op);
      continue;
    }
    Completion& o = out[n++];
    o = {Completion::Recv, fabric::Failure::Other, 0, op->wr, c->user, ""};
    switch (op->kind) {
      case Op::Recv:
        o.len = uint32_t(e[i].len);
        c->rx.give(op);
        break;
      case Op::SharedRecv: o.len = uint32_t(e[i].len); break;
      case Op::Send:
        o.kind = Completion::SendDone;
        c->tx.give(op);
        break;
      case Op::Read:
        o.kind = Completion::ReadDone;
        c->tx.give(op);
        break;
    }
  }
  if (got != -FI_EAVAIL) {
    if (got == -FI_EAGAIN) ++cq_drains_;
    if (got < 0 && got != -FI_EAGAIN)
      RDMX_LOG(LogLevel::Error, rank_, "ofi: fi_cq_read: %s", fi_strerror(int(-got)));
    return n;
  }
  // One error per call: its text lives in cq_text_ until the next call.
  fi_cq_err_entry err{};
  if (fi_cq_readerr(cq_.get(), &err, 0) < 0) return n;
  auto* op = reinterpret_cast<Op*>(err.op_context);
  if (!op || !op->live) return n;
  Conn* c = op->conn;
  if (op->kind == Op::SharedRecv) {
    // Cancelled as the context closes, or a message that names no connection: the
    // buffer stays in the pool (or leaves with it).
    c = sender_of(err.flags, err.data);
    if (err.err == FI_ECANCELED) {
      shared_.give(op);
      return n;
    }
    if (!c) {
      repost_stray(op);
      return n;
    }
  }
  OpTable& table = op->kind == Op::SharedRecv ? shared_ : op->kind == Op::Recv ? c->rx : c->tx;
  if (err.err == FI_ECANCELED && c->state != Conn::State::Up) {
    table.give(op);  // flushed because the connection never came up: its event says why
    return n;
  }
  if (err.err == FI_ECANCELED && c->closing) {
    // Flushed because the connection went down: the event queue said why.
    out[n++] = {Completion::WrError, fabric::Failure::Disconnected, 0, op->wr, c->user, eq_text_};
    table.give(op);
    return n;
  }
  const char* prov = fi_cq_strerror(cq_.get(), err.prov_errno, err.err_data, nullptr, 0);
  if (err.err == FI_ECANCELED)
    std::snprintf(cq_text_, sizeof cq_text_,
                  "%s with %s was flushed: the connection went down (provider %s: %s)",
                  op_name(op->kind), c->peer.c_str(), provider_.c_str(), prov ? prov : "no detail");
  else
    std::snprintf(cq_text_, sizeof cq_text_, "%s with %s failed: %s (provider %s: %s)",
                  op_name(op->kind), c->peer.c_str(), fi_strerror(err.err), provider_.c_str(),
                  prov ? prov : "no detail");
  out[n++] = {Completion::WrError, wr_failure(err.err), 0, op->wr, c->user, cq_text_};
  table.give(op);
  return n;
}

}  // namespace rdmx::ofi
