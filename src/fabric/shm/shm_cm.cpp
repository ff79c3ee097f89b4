// Connection management over the sockets: the handshake (a Connect frame with the
// active side's segment, answered by Accept with the passive side's, or by Reject),
// strangers turned away, and the end of a connection's socket as the peer's end.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/log.h"
#include "fabric/shm/shm_fabric.h"
#include "fabric/shm/shm_faults.h"
#include "fabric/shm/shm_socket.h"

namespace rdmx::shm {
namespace {

constexpr auto kRequestDeadline = std::chrono::milliseconds(10000);
constexpr int kSocketBatch = 512;  // socket events taken by one poll_sockets at most

// What both sides of a connection work with, once established: any SEND is copied when
// posted, small ones ride in the arrivals queue whose room paces them (no credit), and
// the queue keeps the order (Short messages go unnumbered).
fabric::ConnAttrs conn_attrs(uint32_t read_depth) {
  fabric::ConnAttrs a{};
  a.initiator_depth = read_depth;
  a.responder_resources = read_depth;
  a.max_inline = 1u << 30;
  a.max_sge = 8;
  a.max_send_wr = 1u << 20;
  a.rnr_retry = 0;
  a.unnumbered_shorts = true;
  a.uncredited_max = Arrival::kInlineMax;
  return a;
}

}  // namespace

int Fabric::connect(Conn* c, const void* pdata, size_t plen, std::string& err) {
  if (plen > kConnectDataMax) {
    err = "connect private data of " + std::to_string(plen) + " bytes exceeds the limit of " +
          std::to_string(kConnectDataMax);
    return RDMX_ERR_INVALID;
  }
  if (!c->in_h) {
    err = "the shared-memory fabric needs receive memory before connecting";
    return RDMX_ERR_INVALID;
  }
  c->sock = connect_socket(c->peer_name, err);
  if (c->sock < 0) {
    break_conn(c, fabric::Failure::Unreachable, err);
    return RDMX_OK;
  }
  uint32_t uid = 0;
  if (!peer_credentials(c->sock, c->pid, uid) || uid != host_identity().uid) {
    break_conn(
        c, fabric::Failure::Unreachable,
        "the socket at that shm address belongs to another user (uid " + std::to_string(uid) + ")");
    return RDMX_OK;
  }
  Frame f{};
  f.magic = Frame::kMagic;
  f.kind = Frame::Connect;
  f.version = kLayoutVersion;
  f.rd_atomic = rd_atomic_;
  f.pdata_len = uint32_t(plen);
  f.probe_addr = reinterpret_cast<uintptr_t>(c->in.base());
  std::memcpy(f.pdata, pdata, plen);  // padded with zeros, as rdma_cm does
  if (!send_frame(c->sock, &f, sizeof f, c->in.fd())) {
    break_conn(c, fabric::Failure::Unreachable,
               std::string("sending the connect request failed: ") + std::strerror(errno));
    return RDMX_OK;
  }
  c->in.close_fd();
  c->state = Conn::State::Connecting;
  ++busy_;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.ptr = static_cast<Watch*>(c);
  ::epoll_ctl(epfd_, EPOLL_CTL_ADD, c->sock, &ev);
  return RDMX_OK;
}

int Fabric::accept(Conn* c, ConnRequest* req, const void* pdata, size_t plen, std::string& err) {
  if (plen > kAcceptDataMax) {
    err = "accept private data of " + std::to_string(plen) + " bytes exceeds " +
          std::to_string(kAcceptDataMax);
    return RDMX_ERR_INVALID;
  }
  if (!c->in_h) {
    err = "the shared-memory fabric needs receive memory before accepting";
    return RDMX_ERR_INVALID;
  }
  uint32_t depth = std::max(1u, std::min(rd_atomic_, req->frame.rd_atomic));
  uint64_t probe = req->frame.probe_addr;
  std::erase_if(requests_, [req](auto& r) { return r.get() == req; });
  std::string why;
  if (!attach_peer(c, -1, probe, why)) {
    break_conn(c, fabric::Failure::Other, why);
    return RDMX_OK;
  }
  Frame f{};
  f.magic = Frame::kMagic;
  f.kind = Frame::Accept;
  f.version = kLayoutVersion;
  f.rd_atomic = depth;
  f.pdata_len = uint32_t(plen);
  f.probe_addr = reinterpret_cast<uintptr_t>(c->in.base());
  std::memcpy(f.pdata, pdata, plen);
  if (!send_frame(c->sock, &f, sizeof f, c->in.fd())) {
    break_conn(c, fabric::Failure::Disconnected, "the connecting side went away");
    return RDMX_OK;
  }
  c->in.close_fd();
  c->attrs = conn_attrs(depth);
  bind_queues(c);
  CmEvent e;
  e.kind = CmEvent::Established;
  e.user = c->user;
  e.attrs = c->attrs;
  event(std::move(e));
  return RDMX_OK;
}

void Fabric::reject(ConnRequest* req, const void* pdata, size_t plen) {
  Frame f{};
  f.magic = Frame::kMagic;
  f.kind = Frame::Reject;
  f.version = kLayoutVersion;
  f.pdata_len = uint32_t(std::min(plen, kAcceptDataMax));
  std::memcpy(f.pdata, pdata, f.pdata_len);
  send_frame(req->sock, &f, sizeof f);
  drop_request(req);
}

void Fabric::drop_request(ConnRequest* r) {
  if (r->sock >= 0) ::close(r->sock);  // leaves the epoll set with it
  r->sock = -1;
  std::erase_if(requests_, [r](auto& p) { return p.get() == r; });
  busy_ = uint32_t(
      std::count_if(conns_.begin(), conns_.end(),
                    [](auto& c) { return c->state == Conn::State::Connecting; }) +
      std::count_if(requests_.begin(), requests_.end(), [](auto& q) { return !q->received; }));
}

int Fabric::poll_sockets() {
  sockets_due_ = false;
  // Every event ready is taken, up to kSocketBatch of them: among oversubscribed ranks a
  // progress call may come once per round of the scheduler (a second with 256 ranks on
  // two cores), and 16 a call left a rank's 255 connect requests of an alltoall waiting
  // for 16 rounds.
  epoll_event evs[64];
  int total = 0;
  for (int n = int(std::size(evs)); n == int(std::size(evs)) && total < kSocketBatch;) {
    n = ::epoll_wait(epfd_, evs, int(std::size(evs)), 0);
    for (int i = 0; i < n; ++i) {
      auto* w = static_cast<Watch*>(evs[i].data.ptr);
      switch (w->kind) {
        case Watch::Listener: on_listener(); break;
        case Watch::Request: on_request_readable(static_cast<ConnRequest*>(w)); break;
        case Watch::Connection: on_conn_readable(static_cast<Conn*>(w), evs[i].events); break;
      }
    }
    total += std::max(n, 0);
    if (total >= kSocketBatch) sockets_due_ = true;  // more may be waiting
  }
  if (!requests_.empty()) expire_requests();
  return total;
}

// A process connects: it must be this user's; what it says is checked when it arrives.
void Fabric::on_listener() {
  for (int fd; (fd = accept_socket(listener_)) >= 0;) {
    pid_t pid = 0;
    uint32_t uid = 0;
    bool stranger = !peer_credentials(fd, pid, uid) || uid != host_identity().uid;
    if (stranger || requests_.size() >= size_t(kListenBacklog)) {
      RDMX_LOG(LogLevel::Info, rank_,
               "shm: a connection from pid %d (uid %u) closed unanswered: %s", int(pid), uid,
               stranger ? "not this user's" : "too many requests pending");
      ::close(fd);  // a stranger, or a flood: nothing is said to it
      continue;
    }
    auto r = std::make_unique<ConnRequest>();
    r->kind = Watch::Request;
    r->sock = fd;
    r->pid = pid;
    r->since = std::chrono::steady_clock::now();
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.ptr = static_cast<Watch*>(r.get());
    if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      RDMX_LOG(LogLevel::Info, rank_, "shm: a request from pid %d closed unanswered: epoll: %s",
               int(pid), std::strerror(errno));
      ::close(fd);
      continue;
    }
    requests_.push_back(std::move(r));
    ++busy_;
  }
}

void Fabric::on_request_readable(ConnRequest* r) {
  if (r->received) {
    // The requester went away, or spoke out of turn, before the request was answered:
    // it is answered anyway, and its socket's end is seen by the connection.
    return;
  }
  int fd = -1;
  ssize_t n = recv_frame(r->sock, &r->frame, sizeof r->frame, &fd);
  if (n < 0 && errno == EAGAIN) return;
  std::string err;
  int recv_errno = errno;
  bool ok = n == ssize_t(sizeof r->frame) && r->frame.magic == Frame::kMagic &&
            r->frame.kind == Frame::Connect && r->frame.version == kLayoutVersion &&
            r->frame.pdata_len <= kConnectDataMax && fd >= 0;
  if (ok) {
    // The segment owns the descriptor from here, and closes it whether or not it maps.
    ok = r->peer_segment.attach(std::exchange(fd, -1), sizeof(SegmentHeader), err) == RDMX_OK;
  }
  if (!ok) {
    RDMX_LOG(LogLevel::Info, rank_, "shm: a request from pid %d dropped unanswered: %s",
             int(r->pid),
             n < 0          ? std::strerror(recv_errno)
             : !err.empty() ? err.c_str()
                            : "not an rdmx connect request");
    if (fd >= 0) ::close(fd);
    drop_request(r);  // not an rdmx connect request: dropped without an answer
    return;
  }
  r->received = true;
  --busy_;
  CmEvent e;
  e.kind = CmEvent::ConnectRequest;
  e.request = r;
  event(std::move(e));
}

void Fabric::on_conn_readable(Conn* c, uint32_t epoll_events) {
  if (c->state == Conn::State::Connecting) {
    Frame f{};
    int fd = -1;
    ssize_t n = recv_frame(c->sock, &f, sizeof f, &fd);
    if (n < 0 && errno == EAGAIN) return;
    --busy_;
    std::string err;
    if (n == ssize_t(sizeof f) && f.magic == Frame::kMagic && f.kind == Frame::Reject) {
      if (fd >= 0) ::close(fd);
      c->state = Conn::State::Broken;
      ::epoll_ctl(epfd_, EPOLL_CTL_DEL, c->sock, nullptr);
      CmEvent e;
      e.kind = CmEvent::Rejected;
      e.user = c->user;
      e.text = "rejected by the peer";
      e.pdata_len = std::min<uint32_t>(f.pdata_len, kAcceptDataMax);
      std::memcpy(e.pdata, f.pdata, e.pdata_len);
      event(std::move(e));
      return;
    }
    if (n != ssize_t(sizeof f) || f.magic != Frame::kMagic || f.kind != Frame::Accept ||
        f.version != kLayoutVersion || f.pdata_len > kAcceptDataMax || f.rd_atomic == 0 ||
        f.rd_atomic > rd_atomic_) {
      if (fd >= 0) ::close(fd);
      break_conn(c, fabric::Failure::Unreachable,
                 n == 0 ? "the peer closed the connection before answering"
                        : "the peer answered with something that is not an rdmx accept");
      return;
    }
    if (!attach_peer(c, fd, f.probe_addr, err)) {
      break_conn(c, fabric::Failure::Other, err);
      return;
    }
    c->attrs = conn_attrs(f.rd_atomic);
    bind_queues(c);
    CmEvent e;
    e.kind = CmEvent::Established;
    e.user = c->user;
    e.attrs = c->attrs;
    e.pdata_len = kAcceptDataMax;
    std::memcpy(e.pdata, f.pdata, f.pdata_len);
    event(std::move(e));
    return;
  }
  if (c->state != Conn::State::Established) return;
  // Wake-ups, and the end of the socket when the peer disconnects or exits.
  char buf[64];
  int fd = -1;
  for (;;) {
    ssize_t n = recv_frame(c->sock, buf, sizeof buf, &fd);
    if (fd >= 0) ::close(fd);
    if (n > 0) continue;
    if (n < 0 && errno == EAGAIN && !(epoll_events & (EPOLLHUP | EPOLLERR))) return;
    break;
  }
  peer_gone(c);
}

// The peer's socket ended. What it sent before is delivered first (its arrivals stay
// readable in this side's segment), then the connection fails (finish_ends()).
void Fabric::peer_gone(Conn* c) {
  ::epoll_ctl(epfd_, EPOLL_CTL_DEL, c->sock, nullptr);
  if (c->ending) return;
  c->ending = true;
  ends_.push_back(c);
}

void Fabric::finish_ends() {
  for (size_t i = 0; i < ends_.size();) {
    Conn* c = ends_[i];
    if (c->established() && !c->arrivals.empty()) {
      ++i;
      continue;
    }
    ends_.erase(ends_.begin() + ptrdiff_t(i));
    break_conn(c, fabric::Failure::Disconnected,
               "the local peer (pid " + std::to_string(c->pid) + ") disconnected or exited");
  }
}

void Fabric::expire_requests() {
  auto now = std::chrono::steady_clock::now();
  int32_t injected = faults().request_deadline_ms.load(std::memory_order_relaxed);
  auto deadline = injected >= 0 ? std::chrono::milliseconds(injected) : kRequestDeadline;
  for (size_t i = 0; i < requests_.size();) {
    ConnRequest* r = requests_[i].get();
    if (!r->received && now - r->since > deadline) {
      // Among oversubscribed ranks this side may not have looked in all that time: what
      // did arrive is taken, and only a requester that said nothing is dropped.
      size_t pending = requests_.size();
      on_request_readable(r);
      if (requests_.size() != pending || r->received) continue;  // dropped as malformed, or taken
      RDMX_LOG(LogLevel::Info, rank_, "shm: a request from pid %d dropped: nothing said in %lld ms",
               int(r->pid), static_cast<long long>(deadline.count()));
      drop_request(r);
    } else
      ++i;
  }
}

}  // namespace rdmx::shm
