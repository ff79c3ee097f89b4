// Connection management over FI_EP_MSG: active and passive endpoints, connect, accept
// and reject with the engine's bytes as param data, and the event queue (connection
// requests, established connections, rejects, shutdowns, errors).
#include <rdma/fi_errno.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/log.h"
#include "fabric/ofi/ofi_fabric.h"
#include "fabric/ofi/ofi_util.h"
#include "rdmx/rdmx.h"

namespace rdmx::ofi {
namespace {

fabric::Failure failure_of(int err, bool connecting) {
  switch (err) {
    case FI_ECANCELED: return fabric::Failure::Flushed;
    case FI_ETIMEDOUT:
      return connecting ? fabric::Failure::Unreachable : fabric::Failure::RetryExceeded;
    case FI_ECONNREFUSED:
    case FI_EHOSTUNREACH:
    case FI_ENETUNREACH:
    case FI_EADDRNOTAVAIL: return fabric::Failure::Unreachable;
    case FI_ENODEV: return fabric::Failure::DeviceRemoved;
    default: return connecting ? fabric::Failure::Unreachable : fabric::Failure::Disconnected;
  }
}

}  // namespace

int Fabric::setup_endpoint(Conn* c, fi_info* info, std::string& err) {
  if (srx_) info->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
  // A rank's first fabric::kRoomyConns endpoints get the full transmit queue; later ones, of a
  // rank that talks to many peers, a lean one (and, with the shared receive context,
  // a lean receive queue they do not use), as the other fabrics' later connections are
  // lean: the provider keeps both per endpoint (tcp: 46 KB a peer with queues of 256,
  // 29 KB with 64, bench/peer_cost), and sends past the queue wait in the engine.
  uint32_t tx_depth = tx_depth_;
  if (conns_.size() >= fabric::kRoomyConns) {
    tx_depth = std::min(tx_depth_, kLeanQueue);
    info->tx_attr->size = std::min<size_t>(info->tx_attr->size, tx_depth);
    if (srx_) info->rx_attr->size = std::min<size_t>(info->rx_attr->size, kLeanQueue);
  }
  int rc = fi_endpoint(domain_.get(), info, c->ep.out(), c);
  if (rc) {
    err = fi_error("fi_endpoint", rc);
    return RDMX_ERR_FABRIC;
  }
  if ((rc = fi_ep_bind(c->ep.get(), eq_.fid(), 0)) || (rc = bind_cq(c)) ||
      (srx_ && (rc = fi_ep_bind(c->ep.get(), srx_.fid(), 0)))) {
    err = fi_error("fi_ep_bind", rc);
    c->ep.reset();
    return RDMX_ERR_FABRIC;
  }
  if ((rc = fi_enable(c->ep.get()))) {
    err = fi_error("fi_enable", rc);
    c->ep.reset();
    return RDMX_ERR_FABRIC;
  }
  c->tx.init(c, tx_depth, Op::Send);
  c->rx.init(c, srx_ ? 0 : rx_depth_, Op::Recv);
  c->unreported.conn = c;
  c->unreported.kind = Op::Send;
  c->unreported.index = kUnpooled;
  c->unreported.live = true;
  return srx_ ? take_tag(c, err) : RDMX_OK;
}

// A connection's attributes: the fabric's, its own send queue, and READs in flight as
// both sides allow.
void Fabric::settle_attrs(Conn* c, uint8_t peer_rd_atom) {
  c->attrs = attrs_;
  c->attrs.max_send_wr = c->tx.size();
  c->attrs.initiator_depth = std::min<uint32_t>(rd_atom_, peer_rd_atom);
  c->attrs.responder_resources = c->attrs.initiator_depth;
}

// Receives and READs are always reported; sends only when posted with FI_COMPLETION
// (the engine asks for one inline send in several). A provider that refuses the
// selective bind reports every send, as fabric.h allows.
int Fabric::bind_cq(Conn* c) {
  if (selective_) {
    int rc = fi_ep_bind(c->ep.get(), cq_.fid(), FI_TRANSMIT | FI_SELECTIVE_COMPLETION);
    if (rc == 0) return fi_ep_bind(c->ep.get(), cq_.fid(), FI_RECV);
    RDMX_LOG(LogLevel::Info, rank_, "ofi: provider %s: no selective completion (%s)",
             provider_.c_str(), fi_strerror(-rc));
    selective_ = false;
  }
  return fi_ep_bind(c->ep.get(), cq_.fid(), FI_TRANSMIT | FI_RECV);
}

int Fabric::create_conn(const uint8_t* addr, size_t addr_len, ConnRequest* req, void* user,
                        Conn** out, std::string& err) {
  auto conn = std::make_unique<Conn>();
  Conn* c = conn.get();
  c->user = user;
  c->active = req == nullptr;
  c->serial = next_serial_++;
  int rc;
  if (c->active) {
    if (!decode_address(addr, addr_len, provider_, info_->addr_format, c->dest, err))
      return RDMX_ERR_INVALID;
    c->peer = describe_sockaddr(c->dest.data(), c->dest.size());
    Info ci(fi_dupinfo(info_.get()));
    if (!ci) {
      err = "out of memory for fi_dupinfo";
      return RDMX_ERR_NO_MEMORY;
    }
    std::free(ci->dest_addr);
    ci->dest_addr = std::malloc(c->dest.size());
    if (!ci->dest_addr) {
      err = "out of memory for an address";
      return RDMX_ERR_NO_MEMORY;
    }
    std::memcpy(ci->dest_addr, c->dest.data(), c->dest.size());
    ci->dest_addrlen = c->dest.size();
    rc = setup_endpoint(c, ci.get(), err);
  } else {
    if (!req->info) {
      err = "the connection request was already answered";
      return RDMX_ERR_INVALID;
    }
    c->peer = req->info->dest_addr
                  ? describe_sockaddr(req->info->dest_addr, req->info->dest_addrlen)
                  : std::string("the connecting peer");
    c->peer_tag = req->peer_tag;
    rc = setup_endpoint(c, req->info, err);
    if (rc == RDMX_OK) req->conn = c;
    // At most every receive posted arrives early; from a shared context, rarely any.
    c->early = Ring<Completion>(srx_ ? 0 : rx_depth_);
    settle_attrs(c, req->peer_rd_atom);
  }
  if (rc) {
    err = (c->active ? "endpoint for " : "endpoint accepting ") + c->peer + ": " + err;
    return rc;
  }
  *out = c;
  conns_.push_back(std::move(conn));
  return RDMX_OK;
}

size_t Fabric::wrap(const void* pdata, size_t plen, uint16_t tag) {
  CmHeader h{kCmHeaderMagic, 1, rd_atom_, tag};
  std::memcpy(cm_out_, &h, sizeof h);
  if (plen) std::memcpy(cm_out_ + sizeof h, pdata, plen);
  return sizeof h + plen;
}

const uint8_t* Fabric::unwrap(const uint8_t* data, size_t& len, uint8_t& rd_atom, uint16_t& tag) {
  CmHeader h{};
  if (!data || len < sizeof h) return data;
  std::memcpy(&h, data, sizeof h);
  if (h.magic != kCmHeaderMagic) return data;  // not ours: the engine judges the bytes
  rd_atom = h.rd_atom ? h.rd_atom : 1;
  tag = h.tag;
  len -= sizeof h;
  return data + sizeof h;
}

int Fabric::connect(Conn* c, const void* pdata, size_t plen, std::string& err) {
  eq_due();
  if (plen > max_connect_data()) {
    err = "connect data of " + std::to_string(plen) + " bytes exceeds the limit of " +
          std::to_string(max_connect_data()) + " bytes (libfabric provider '" + provider_ +
          "' carries " + std::to_string(cm_data_size_) +
          " bytes, FI_OPT_CM_DATA_SIZE, of which this backend's header takes " +
          std::to_string(sizeof(CmHeader)) + ")";
    return RDMX_ERR_INVALID;
  }
  if (!c->ep || c->state != Conn::State::Created) {
    err = "the connection is not in a state to connect";
    return RDMX_ERR_INVALID;
  }
  size_t len = wrap(pdata, plen, c->tag);
  int rc = fi_connect(c->ep.get(), c->dest.data(), cm_out_, len);
  if (rc) {
    err = fi_error("fi_connect", rc) + " (to " + c->peer + ")";
    return RDMX_ERR_UNREACHABLE;
  }
  c->state = Conn::State::Connecting;
  return RDMX_OK;
}

int Fabric::accept(Conn* c, ConnRequest* req, const void* pdata, size_t plen, std::string& err) {
  eq_due();
  req->answered = true;
  if (plen > max_connect_data()) {
    err = "accept data of " + std::to_string(plen) + " bytes exceeds the limit of " +
          std::to_string(max_connect_data()) + " bytes (FI_OPT_CM_DATA_SIZE)";
    return RDMX_ERR_INVALID;
  }
  size_t len = wrap(pdata, plen, c->tag);
  int rc = fi_accept(c->ep.get(), cm_out_, len);
  if (rc) {
    err = fi_error("fi_accept", rc) + " (from " + c->peer + ")";
    return RDMX_ERR_FABRIC;
  }
  c->state = Conn::State::Accepting;
  return RDMX_OK;
}

void Fabric::reject(ConnRequest* req, const void* pdata, size_t plen) {
  if (req->answered || !req->info) return;
  req->answered = true;
  size_t len = wrap(pdata, std::min(plen, max_connect_data()), 0);
  int rc = fi_reject(pep_.get(), req->info->handle, cm_out_, len);
  if (rc) RDMX_LOG(LogLevel::Warn, rank_, "ofi: %s", fi_error("fi_reject", rc).c_str());
  if (req->conn) disconnect(req->conn);
}

void Fabric::disconnect(Conn* c) {
  if (!c || c->state == Conn::State::Down) return;  // null: create_conn failed
  eq_due();
  if (c->ep && c->state == Conn::State::Up) fi_shutdown(c->ep.get(), 0);
  go_down(c);
}

// Closing the endpoint stops the provider from touching any posted buffer, so the
// engine may release them; what was posted is reported as flushed.
void Fabric::go_down(Conn* c) {
  c->ep.reset();
  c->state = Conn::State::Down;
  c->down_at = cq_drains_;
  flush(c, c->tx);
  flush(c, c->rx);
}

void Fabric::release(Conn* c) {
  if (c->tag) {
    tagged_[c->tag] = nullptr;
    free_tags_.push_back(c->tag);
  }
  std::erase_if(conns_, [c](auto& p) { return p.get() == c; });
}

void Fabric::flush(Conn* c, OpTable& t) {
  for (uint32_t i = 0; i < t.size(); ++i) {
    Op& op = t.at(i);
    if (!op.live) continue;
    t.give(&op);
    deferred_.push({Completion::WrError, fabric::Failure::Flushed, 0, op.wr, c->user,
                    "the connection was closed with the operation posted"});
  }
}

Conn* Fabric::conn_of(fid_t f) const {
  if (!f || f->fclass != FI_CLASS_EP) return nullptr;
  return static_cast<Conn*>(f->context);
}

void Fabric::finish_request() {
  if (!request_.answered && request_.info) fi_reject(pep_.get(), request_.info->handle, nullptr, 0);
  if (request_.info) fi_freeinfo(request_.info);
  request_ = ConnRequest{};
}

bool Fabric::poll_eq(CmEvent& ev) {
  for (;;) {
    uint32_t event = 0;
    ssize_t rc = fi_eq_read(eq_.get(), &event, eq_buf_, sizeof eq_buf_, 0);
    if (rc == -FI_EAGAIN) return false;
    if (rc == -FI_EAVAIL) {
      if (eq_error(ev)) return true;
      continue;
    }
    if (rc < 0) {
      RDMX_LOG(LogLevel::Error, rank_, "ofi: %s", fi_error("fi_eq_read", int(rc)).c_str());
      return false;
    }
    auto* entry = reinterpret_cast<fi_eq_cm_entry*>(eq_buf_);
    size_t dlen = size_t(rc) > sizeof *entry ? size_t(rc) - sizeof *entry : 0;
    ev = CmEvent{CmEvent::ConnError,
                 fabric::Failure::Other,
                 nullptr,
                 entry->data,
                 dlen,
                 "",
                 nullptr,
                 nullptr};
    if (event == FI_CONNREQ) {
      if (request_.info) fi_freeinfo(request_.info);
      request_ = ConnRequest{entry->info, nullptr, 1, 0, false};
      ev.data = unwrap(entry->data, ev.len, request_.peer_rd_atom, request_.peer_tag);
      ev.kind = CmEvent::ConnectRequest;
      return true;
    }
    Conn* c = conn_of(entry->fid);
    if (!c || c->state == Conn::State::Down) continue;  // closed here already
    ev.user = c->user;
    ev.conn = c;
    if (event == FI_CONNECTED) {
      c->state = Conn::State::Up;
      ev.kind = CmEvent::Established;
      ev.attrs = &c->attrs;
      if (c->active) {
        uint8_t peer_rd_atom = 1;
        ev.data = unwrap(entry->data, ev.len, peer_rd_atom, c->peer_tag);
        settle_attrs(c, peer_rd_atom);
      } else {
        ev.len = 0;
      }
      return true;
    }
    if (event == FI_SHUTDOWN) {
      c->closing = true;
      std::snprintf(eq_text_, sizeof eq_text_,
                    "the peer at %s closed the connection (libfabric FI_SHUTDOWN)",
                    c->peer.c_str());
      ev.failure = fabric::Failure::Disconnected;
      ev.text = eq_text_;
      ev.len = 0;
      return true;
    }
    RDMX_LOG(LogLevel::Debug, rank_, "ofi: ignoring event %u", event);
  }
}

// An error entry on the event queue: a reject (with the peer's param data), a refused
// or failed connect, or a connection that broke.
bool Fabric::eq_error(CmEvent& ev) {
  fi_eq_err_entry e{};
  e.err_data = err_data_;
  e.err_data_size = sizeof err_data_;
  ssize_t rc = fi_eq_readerr(eq_.get(), &e, 0);
  if (rc < 0) {
    RDMX_LOG(LogLevel::Error, rank_, "ofi: %s", fi_error("fi_eq_readerr", int(rc)).c_str());
    return false;
  }
  size_t dlen = e.err_data ? std::min(e.err_data_size, sizeof err_data_) : 0;
  if (dlen && e.err_data != err_data_) std::memmove(err_data_, e.err_data, dlen);
  const char* prov = fi_eq_strerror(eq_.get(), e.prov_errno, e.err_data, nullptr, 0);
  Conn* c = conn_of(e.fid);
  if (!c || c->state == Conn::State::Down) {
    RDMX_LOG(LogLevel::Info, rank_, "ofi: event queue error outside a connection: %s (%s)",
             fi_strerror(e.err), prov ? prov : "");
    return false;
  }
  bool connecting = c->state != Conn::State::Up;
  c->closing = true;
  ev = CmEvent{CmEvent::ConnError,
               failure_of(e.err, connecting),
               c->user,
               err_data_,
               dlen,
               eq_text_,
               nullptr,
               c};
  if (e.err == FI_ECONNREFUSED && dlen > 0 && c->active && connecting) {
    std::snprintf(eq_text_, sizeof eq_text_, "%s rejected the connection (libfabric: %s)",
                  c->peer.c_str(), fi_strerror(e.err));
    ev.kind = CmEvent::Rejected;
    uint8_t rd_atom = 0;
    uint16_t tag = 0;
    ev.data = unwrap(err_data_, ev.len, rd_atom, tag);
    go_down(c);
    return true;
  }
  if (e.err == FI_ECONNREFUSED)
    std::snprintf(eq_text_, sizeof eq_text_, "nobody accepts connections at %s (libfabric: %s)",
                  c->peer.c_str(), fi_strerror(e.err));
  else
    std::snprintf(eq_text_, sizeof eq_text_, "%s %s: %s (provider %s: %s)",
                  connecting ? "connecting with" : "connection with", c->peer.c_str(),
                  fi_strerror(e.err), provider_.c_str(), prov ? prov : "no detail");
  return true;
}

}  // namespace rdmx::ofi
