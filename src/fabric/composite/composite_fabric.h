// A network fabric and the shared-memory fabric behind one Fabric: each connection is
// made through shared memory when the peer is on this host (its address says so, see
// shm_host.h), else through the network fabric. The engine sees one fabric; each call
// on a connection goes to the fabric that made it, by one well-predicted branch on the
// connection, never a virtual call.
//
// An address is both fabrics' addresses, each behind its length (the shm part is empty
// when this rank does not use shared memory, so both sides of a pair decide alike).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/idle_poll.h"
#include "fabric/fabric.h"
#include "fabric/relay.h"
#include "fabric/shm/shm_fabric.h"
#include "protocol/wire.h"

namespace rdmx::composite {

// The composite's name for each network fabric ("ofi+shm"), given where it is
// instantiated (api/<backend>_context.cpp).
template <class Net>
struct Name;

template <fabric::Fabric Net>
class Fabric {
 public:
  static constexpr const char* kName = Name<Net>::value;
  static constexpr const char* kNetName = Net::kName;

  struct Conn {
    typename Net::Conn* net = nullptr;
    shm::Conn* shm = nullptr;
  };
  struct ConnRequest {
    typename Net::ConnRequest* net = nullptr;
    shm::ConnRequest* shm = nullptr;
  };
  class Region {
   public:
    const void* desc() const { return net_.desc(); }
    uint64_t key() const { return net_.key(); }
    uint64_t remote_address(const void* p) const { return net_.remote_address(p); }

   private:
    friend class Fabric;
    typename Net::Region net_{};
    shm::Fabric::Region shm_{};
    bool shm_live_ = false;
  };

  int open(const Settings& s, int32_t rank, std::string& err) {
    if (int rc = net_.open(s, rank, err)) return rc;
    if (s.shm == "off") return RDMX_OK;
    std::string why;
    if (int rc = shm_.open(s, rank, why); rc == RDMX_OK) {
      shm_on_ = true;
      return RDMX_OK;
    }
    if (s.shm == "on") {
      err = "RDMX_SHM=on, but shared memory cannot be used: " + why;
      return RDMX_ERR_UNSUPPORTED;
    }
    shm_off_why_ = why;  // auto: every peer through the network fabric
    return RDMX_OK;
  }

  size_t address(uint8_t* buf, size_t cap) const {
    size_t nl = net_.address(nullptr, 0), sl = shm_on_ ? shm_.address(nullptr, 0) : 0;
    size_t total = 4 + nl + sl;
    if (cap < total) return total;
    uint16_t lens[2] = {uint16_t(nl), uint16_t(sl)};
    std::memcpy(buf, lens, 4);
    net_.address(buf + 4, nl);
    if (sl) shm_.address(buf + 4 + nl, sl);
    return total;
  }
  size_t max_connect_data() const {
    return std::min(net_.max_connect_data(), shm::Fabric::kConnectDataMax);
  }

  // Whether a peer with this address is reached through shared memory.
  bool via_shm(const uint8_t* addr, size_t len) const {
    const uint8_t* s;
    size_t sl;
    return shm_on_ && split(addr, len, nullptr, nullptr, &s, &sl) && sl && shm_.reachable(s, sl);
  }
  const std::string& shm_off_reason() const { return shm_off_why_; }
  // The network fabric's words for the path of c, or null (rails_fabric.h).
  const char* path_label(const Conn* c) const {
    if constexpr (requires { net_.path_label(c->net); })
      if (c->net) return net_.path_label(c->net);
    return nullptr;
  }
  bool shm_on() const { return shm_on_; }
  void fill_stats(rdmx_stats_t& s) const {
    if constexpr (requires { net_.fill_stats(s); }) net_.fill_stats(s);
    shm_.fill_stats(s);
  }

  int create_conn(const uint8_t* addr, size_t len, ConnRequest* req, void* user, Conn** out,
                  std::string& err) {
    auto c = std::make_unique<Conn>();
    int rc;
    if (req) {
      rc = req->shm ? shm_.create_conn(nullptr, 0, req->shm, user, &c->shm, err)
                    : net_.create_conn(nullptr, 0, req->net, user, &c->net, err);
    } else {
      const uint8_t *n, *s;
      size_t nl, sl;
      if (!split(addr, len, &n, &nl, &s, &sl)) {
        err = "an address of " + std::to_string(len) + " bytes is not an rdmx address";
        return RDMX_ERR_INVALID;
      }
      rc = via_shm(addr, len) ? shm_.create_conn(s, sl, nullptr, user, &c->shm, err)
                              : net_.create_conn(n, nl, nullptr, user, &c->net, err);
    }
    if (rc) return rc;
    if (c->net) ++net_conns_;
    *out = c.get();
    conns_.push_back(std::move(c));
    return RDMX_OK;
  }
  uint32_t qp_num(const Conn* c) const {
    return c->shm ? shm_.qp_num(c->shm) : net_.qp_num(c->net);
  }
  // The network fabric's shared receive pool (RDMX_SRQ), where it has one: its
  // connections receive from it, shared memory's keep their own queues.
  void enable_shared_receive() requires requires(Net& n) { n.enable_shared_receive(); }
  { net_.enable_shared_receive(); }
  int post_shared_recv(void* buf, uint32_t len, const Region& r, uint64_t wr) requires
      requires(Net& n, const typename Net::Region& nr) {
    n.post_shared_recv(buf, len, nr, wr);
  }
  { return net_.post_shared_recv(buf, len, r.net_, wr); }
  uint32_t shared_receive_depth() const requires requires(const Net& n) {
    n.shared_receive_depth();
  }
  { return net_.shared_receive_depth(); }
  int arm_shared_receive_limit(uint32_t n) requires requires(Net& f) {
    f.arm_shared_receive_limit(n);
  }
  { return net_.arm_shared_receive_limit(n); }
  bool shared_receive(const Conn* c) const { return c->net != nullptr; }

  int recv_memory(Conn* c, uint32_t count, uint32_t size, uint8_t** out, std::string& err) {
    *out = nullptr;
    return c->shm ? shm_.recv_memory(c->shm, count, size, out, err) : RDMX_OK;
  }
  int connect(Conn* c, const void* p, size_t n, std::string& err) {
    return c->shm ? shm_.connect(c->shm, p, n, err) : net_.connect(c->net, p, n, err);
  }
  int accept(Conn* c, ConnRequest* req, const void* p, size_t n, std::string& err) {
    int rc = c->shm ? shm_.accept(c->shm, req->shm, p, n, err)
                    : net_.accept(c->net, req->net, p, n, err);
    forget(req);
    return rc;
  }
  void reject(ConnRequest* req, const void* p, size_t n) {
    if (req->shm)
      shm_.reject(req->shm, p, n);
    else
      net_.reject(req->net, p, n);
    forget(req);
  }
  void disconnect(Conn* c) {
    if (c->shm)
      shm_.disconnect(c->shm);
    else
      net_.disconnect(c->net);
  }
  static constexpr bool kNetReleases = fabric::ReleasesConns<Net>;
  bool settled(const Conn* c) const requires kNetReleases {
    return c->shm ? shm_.settled(c->shm) : net_.settled(c->net);
  }
  void release(Conn* c) requires kNetReleases {
    if (c->shm)
      shm_.release(c->shm);
    else
      net_.release(c->net);
    std::erase_if(conns_, [c](auto& p) { return p.get() == c; });
  }

  int reg(void* addr, size_t len, uint32_t access, Region& out, std::string& err) {
    if (int rc = net_.reg(addr, len, access, out.net_, err)) return rc;
    if (shm_on_) {
      shm_.reg(addr, len, access, out.shm_, err);
      out.shm_live_ = true;
    }
    return RDMX_OK;
  }
  void dereg(Region& r) {
    net_.dereg(r.net_);
    if (r.shm_live_) shm_.dereg(r.shm_);
    r.shm_live_ = false;
  }
  bool pins_memory() const {
    if constexpr (requires { net_.pins_memory(); }) return net_.pins_memory();
    return true;
  }
  // What a rendezvous tells the peer on c about the buffer p of region r.
  std::pair<uint64_t, uint64_t> remote_ref(const Conn* c, const Region& r, const void* p) const {
    if (c->shm) return {r.shm_.remote_address(p), r.shm_.key()};
    if constexpr (requires { net_.remote_ref(c->net, r.net_, p); })
      return net_.remote_ref(c->net, r.net_, p);
    return {r.net_.remote_address(p), r.net_.key()};
  }

  // Each fabric's limits for its connections (the shared-memory fabric keeps the
  // default eager limit).
  uint64_t eager_limit(const Conn* c) const {
    if constexpr (requires { net_.eager_limit(c->net); })
      if (!c->shm) return net_.eager_limit(c->net);
    return fabric::kDefaultEagerLimit;
  }
  uint64_t max_eager_limit() const {
    if constexpr (requires { net_.max_eager_limit(); })
      return std::max(net_.max_eager_limit(), fabric::kDefaultEagerLimit);
    return fabric::kDefaultEagerLimit;
  }
  uint64_t midsize_limit(const Conn* c) const {
    if (c->shm) return shm_.midsize_limit(c->shm);
    if constexpr (requires { net_.midsize_limit(c->net); }) return net_.midsize_limit(c->net);
    return 0;
  }
  uint32_t credit_window(const Conn* c) const {
    if (c->shm) return shm_.credit_window(c->shm);
    if constexpr (requires { net_.credit_window(c->net); }) return net_.credit_window(c->net);
    return fabric::kDefaultCredits;
  }
  uint64_t rndv_chunk(const Conn* c) const {
    if (c->shm) return shm_.rndv_chunk(c->shm);
    if constexpr (requires { net_.rndv_chunk(c->net); }) return net_.rndv_chunk(c->net);
    return fabric::kDefaultRndvChunk;
  }
  uint64_t lone_rndv_chunk(const Conn* c) const {
    if constexpr (requires { net_.lone_rndv_chunk(c->net); })
      if (!c->shm) return net_.lone_rndv_chunk(c->net);
    return rndv_chunk(c);
  }
  uint32_t max_reads(const Conn* c) const {
    if constexpr (requires { net_.max_reads(c->net); })
      if (!c->shm) return net_.max_reads(c->net);
    return UINT32_MAX;
  }

  int post_recvs(Conn* c, const fabric::RecvBuf* b, int n, const Region& r) {
    return c->shm ? shm_.post_recvs(c->shm, b, n, r.shm_) : net_.post_recvs(c->net, b, n, r.net_);
  }
  [[gnu::always_inline]] int send(Conn* c, const fabric::Sge* sge, int n, uint32_t flags,
                                  uint64_t wr) {
    if (c->shm) return shm_.send(c->shm, sge, n, flags, wr);
    return net_.send(c->net, sge, n, flags, wr);
  }
  // The engine's short messages: through shared memory without a gather list.
  [[gnu::always_inline]] int send_short(Conn* c, const wire::Header& h, const void* payload,
                                        uint32_t len, uint32_t flags, uint64_t wr) {
    if (c->shm) return shm_.send_short(c->shm, h, payload, len, flags, wr);
    fabric::Sge sge[2] = {{&h, wire::kShortBytes, nullptr}, {payload, len, nullptr}};
    return net_.send(c->net, sge, len ? 2 : 1, flags, wr);
  }
  int read(Conn* c, void* local, uint64_t len, const Region& r, uint64_t raddr, uint64_t rkey,
           uint64_t wr) {
    if (c->shm) return shm_.read(c->shm, local, len, r.shm_, raddr, rkey, wr);
    return net_.read(c->net, local, len, r.net_, raddr, rkey, wr);
  }

  template <class Sink>
  int progress(Sink& sink);
  // Sleeps on whichever fabric has connections; with both, in short turns (neither's
  // wait object can be waited on together with the other's).
  int wait(int timeout_ms) {
    if (!shm_on_) return net_.wait(timeout_ms);
    int slice = net_conns_ ? std::min(timeout_ms, 1) : std::min(timeout_ms, 10);
    net_idle_.kick();  // time has passed: the next progress looks for requests
    if (int rc = shm_.wait(slice)) return rc;
    return net_.wait(0);  // (and the network fabric at all its queues)
  }

  Net& net() { return net_; }
  shm::Fabric& shm() { return shm_; }

 private:
  // The inner fabrics' reports, passed on with their requests wrapped.
  template <class Sink, class Inner>
  struct Relay : fabric::Relay<Sink> {
    Fabric* self;
    void on_connect_request(typename Inner::ConnRequest* r, const uint8_t* pdata, size_t len) {
      auto w = std::make_unique<ConnRequest>();
      if constexpr (std::is_same_v<Inner, shm::Fabric>)
        w->shm = r;
      else
        w->net = r;
      ConnRequest* raw = w.get();
      self->requests_.push_back(std::move(w));
      this->sink.on_connect_request(raw, pdata, len);
    }
  };

  // Without network connections the network fabric only has requests to notice, and
  // its progress is a system call (libfabric tcp polls its sockets, rdma_cm reads its
  // channel) that on-host messages should not pay for on every call: it is polled when
  // net_idle_ says so (core/idle_poll.h). One poll in thousands of calls left connection
  // requests from other hosts unanswered for longer than the connect timeout among
  // ranks that yield their processor.

  static bool split(const uint8_t* a, size_t len, const uint8_t** n, size_t* nl, const uint8_t** s,
                    size_t* sl) {
    if (len < 4) return false;
    uint16_t lens[2];
    std::memcpy(lens, a, 4);
    if (size_t(4) + lens[0] + lens[1] != len || lens[0] == 0) return false;
    if (n) *n = a + 4;
    if (nl) *nl = lens[0];
    *s = a + 4 + lens[0];
    *sl = lens[1];
    return true;
  }
  void forget(ConnRequest* r) {
    std::erase_if(requests_, [r](auto& p) { return p.get() == r; });
  }

  Net net_;
  shm::Fabric shm_;
  bool shm_on_ = false;
  std::string shm_off_why_;
  uint32_t net_conns_ = 0;  // connections made through the network fabric, ever
  IdlePoll<> net_idle_;     // when to poll the network fabric while it has no connections
  std::vector<std::unique_ptr<Conn>> conns_;
  std::vector<std::unique_ptr<ConnRequest>> requests_;
};

template <fabric::Fabric Net>
template <class Sink>
int Fabric<Net>::progress(Sink& sink) {
  int n = 0;
  if (shm_on_) {
    Relay<Sink, shm::Fabric> r{{sink}, this};
    n += shm_.progress(r);
  }
  if (net_conns_ || !shm_on_ || net_idle_.due()) {
    Relay<Sink, Net> r{{sink}, this};
    n += net_.progress(r);
  }
  return n;
}

}  // namespace rdmx::composite
