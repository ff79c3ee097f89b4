// Several devices behind one Fabric: one instance of the network fabric Net per device
// (a rail), each with its own listener, protection domain, completion queue and device
// events. A connection goes through one rail, chosen when it is made (rail_path.h: a
// device in the peer's subnet, the nearest, the least used); the engine sees one
// fabric, and every call on a connection goes to its rail's instance through a pointer
// the connection holds, never a virtual call. With one device (the default) this is a
// thin forwarding layer.
//
// Memory is registered on every rail; a rendezvous names the key of the rail its
// connection uses (remote_ref). Striping one message over several rails would fit here:
// a READ split by the rails of several connections to the same peer.
//
// Net provides, besides the Fabric concept: rail_specs(settings, specs, err) (static:
// the devices to open), address_prefix(addr, len, prefix) (static: the IP address of
// one of its addresses), local_prefix() and device_name().
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/log.h"
#include "fabric/fabric.h"
#include "fabric/rails/rail_path.h"
#include "fabric/rails/rail_spec.h"
#include "fabric/relay.h"
#include "rdmx/rdmx.h"

namespace rdmx::rails {

// The address of a context with several devices: a header, then each device's address
// behind its length. With one device the address is that device's alone.
struct AddressHeader {
  static constexpr uint32_t kMagic = 0x534c4952;  // "RILS"
  uint32_t magic;
  uint16_t count;
  uint16_t reserved;
};

// Splits a rails address into its rails' addresses; false (out empty) if it is not one.
inline bool split_address(const uint8_t* addr, size_t len,
                          std::vector<std::pair<const uint8_t*, size_t>>& out) {
  out.clear();
  AddressHeader h;
  if (!addr || len < sizeof h) return false;
  std::memcpy(&h, addr, sizeof h);
  if (h.magic != AddressHeader::kMagic || h.count == 0 || h.count > kMaxRails) return false;
  size_t off = sizeof h;
  for (uint16_t i = 0; i < h.count; ++i) {
    uint16_t n;
    if (len - off < 2) break;
    std::memcpy(&n, addr + off, 2);
    off += 2;
    if (n == 0 || len - off < n) break;
    out.push_back({addr + off, n});
    off += n;
  }
  if (out.size() == h.count && off == len) return true;
  out.clear();
  return false;
}

template <fabric::Fabric Net>
class Fabric {
 public:
  static constexpr const char* kName = Net::kName;

  struct Conn {
    typename Net::Conn* inner = nullptr;
    Net* net = nullptr;
    uint32_t rail = 0;
  };
  struct ConnRequest {
    typename Net::ConnRequest* inner = nullptr;
    uint32_t rail = 0;
  };
  class Region {
   public:
    // The descriptor of a piece of a SEND is this region: send() takes the rail's own.
    const void* desc() const { return this; }
    uint64_t key() const { return sub_[0].key(); }
    uint64_t remote_address(const void* p) const { return sub_[0].remote_address(p); }

   private:
    friend class Fabric;
    std::array<typename Net::Region, kMaxRails> sub_{};
    uint32_t count_ = 0;
  };

  int open(const Settings& s, int32_t rank, std::string& err) {
    rank_ = rank;
    std::vector<RailSpec> specs;
    if (int rc = Net::rail_specs(s, specs, err)) return rc;
    if (specs.size() > 1 && s.srq > 0) {
      if (!s.srq_auto) {
        err = "RDMX_SRQ=1 with several devices (RDMX_VERBS_DEVICE=" + s.verbs_device +
              "): a shared receive queue belongs to one device; name one device or use "
              "RDMX_SRQ=0";
        return RDMX_ERR_UNSUPPORTED;
      }
      for (RailSpec& spec : specs) spec.settings.srq = 0;  // per connection on every device
    }
    std::string skipped;
    for (const RailSpec& spec : specs) {
      auto net = std::make_unique<Net>();
      if constexpr (requires { net->enable_shared_receive(); })
        if (shared_receive_) net->enable_shared_receive();
      std::string why;
      if (int rc = net->open(spec.settings, rank, why)) {
        if (!spec.optional) {
          err = specs.size() > 1 ? spec.device + ": " + why : why;
          return rc;
        }
        skipped += (skipped.empty() ? "" : "; ") + spec.device + ": " + why;
        continue;
      }
      RailView v;
      v.local = net->local_prefix();
      v.tier = spec.tier;
      views_.push_back(v);
      labels_.push_back(std::string(kName) + ":" + net->device_name());
      rails_.push_back(std::move(net));
    }
    if (rails_.empty()) {
      err = "RDMX_VERBS_DEVICE=" + s.verbs_device + ": no device could be opened (" + skipped + ")";
      return RDMX_ERR_NO_DEVICE;
    }
    if (!skipped.empty())
      RDMX_LOG(LogLevel::Info, rank, "rails: devices left out: %s", skipped.c_str());
    if (rails_.size() > 1) {
      std::string list;
      for (size_t i = 0; i < rails_.size(); ++i)
        list += (i ? ", " : "") + rails_[i]->device_name() + " " + views_[i].local.text() +
                " tier " + std::to_string(views_[i].tier);
      RDMX_LOG(LogLevel::Info, rank, "rails: %zu devices: %s", rails_.size(), list.c_str());
    }
    // Single-device peers of a multi-device rank spread over its devices by this.
    uint8_t own[256];
    size_t n = address(own, sizeof own);
    spread_ = 1469598103934665603ull;
    for (size_t i = 0; i < std::min(n, sizeof own); ++i)
      spread_ = (spread_ ^ own[i]) * 1099511628211ull;
    return RDMX_OK;
  }

  size_t address(uint8_t* buf, size_t cap) const {
    // One device: its own address, as the fabric alone would give it.
    if (rails_.size() == 1) return rails_[0]->address(buf, cap);
    size_t total = sizeof(AddressHeader);
    for (const auto& r : rails_) total += 2 + r->address(nullptr, 0);
    if (!buf || cap < total) return total;
    AddressHeader h{AddressHeader::kMagic, uint16_t(rails_.size()), 0};
    std::memcpy(buf, &h, sizeof h);
    size_t off = sizeof h;
    for (const auto& r : rails_) {
      uint16_t len = uint16_t(r->address(nullptr, 0));
      std::memcpy(buf + off, &len, 2);
      r->address(buf + off + 2, len);
      off += 2 + len;
    }
    return total;
  }
  size_t max_connect_data() const { return rails_[0]->max_connect_data(); }

  int create_conn(const uint8_t* addr, size_t len, ConnRequest* req, void* user, Conn** out,
                  std::string& err) {
    auto c = std::make_unique<Conn>();
    int rc;
    if (req) {
      c->rail = req->rail;
      c->net = rails_[req->rail].get();
      rc = c->net->create_conn(nullptr, 0, req->inner, user, &c->inner, err);
    } else {
      std::vector<std::pair<const uint8_t*, size_t>> parts;
      if (!split_address(addr, len, parts)) parts.push_back({addr, len});  // one device's
      Path path;
      if (rails_.size() > 1 || parts.size() > 1) {
        std::vector<IpPrefix> peer;
        for (auto [a, n] : parts) {
          IpPrefix p;
          if (!Net::address_prefix(a, n, p)) break;
          peer.push_back(p);
        }
        if (peer.size() != parts.size()) {
          err = "an address of " + std::to_string(len) + " bytes is not one of the " +
                std::string(kName) + " fabric's (one device's, or several behind a header)";
          return RDMX_ERR_INVALID;
        }
        if constexpr (requires(const Net& n) { n.device_down(); })
          for (size_t i = 0; i < rails_.size(); ++i) views_[i].down = rails_[i]->device_down();
        path = choose_path(views_, peer, spread_);
        RDMX_LOG(LogLevel::Info, rank_, "rails: to %s through %s (%s)",
                 peer[path.peer].text().c_str(), rails_[path.rail]->device_name().c_str(),
                 views_[path.rail].local.text().c_str());
      }
      c->rail = uint32_t(path.rail);
      c->net = rails_[path.rail].get();
      rc = c->net->create_conn(parts[path.peer].first, parts[path.peer].second, nullptr, user,
                               &c->inner, err);
    }
    if (rc) return rc;
    ++views_[c->rail].conns;
    *out = c.get();
    conns_.push_back(std::move(c));
    return RDMX_OK;
  }
  uint32_t qp_num(const Conn* c) const { return c->net->qp_num(c->inner); }
  int connect(Conn* c, const void* p, size_t n, std::string& err) {
    return c->net->connect(c->inner, p, n, err);
  }
  int accept(Conn* c, ConnRequest* req, const void* p, size_t n, std::string& err) {
    int rc = c->net->accept(c->inner, req->inner, p, n, err);
    forget(req);
    return rc;
  }
  void reject(ConnRequest* req, const void* p, size_t n) {
    rails_[req->rail]->reject(req->inner, p, n);
    forget(req);
  }
  void disconnect(Conn* c) { c->net->disconnect(c->inner); }
  static constexpr bool kNetReleases = fabric::ReleasesConns<Net>;
  bool settled(const Conn* c) const requires kNetReleases { return c->net->settled(c->inner); }
  void release(Conn* c) requires kNetReleases {
    c->net->release(c->inner);
    --views_[c->rail].conns;
    std::erase_if(conns_, [c](auto& p) { return p.get() == c; });
  }

  int reg(void* addr, size_t len, uint32_t access, Region& out, std::string& err) {
    for (size_t i = 0; i < rails_.size(); ++i)
      if (int rc = rails_[i]->reg(addr, len, access, out.sub_[i], err)) {
        while (i-- > 0) rails_[i]->dereg(out.sub_[i]);
        return rc;
      }
    out.count_ = uint32_t(rails_.size());
    return RDMX_OK;
  }
  void dereg(Region& r) {
    for (uint32_t i = 0; i < r.count_; ++i) rails_[i]->dereg(r.sub_[i]);
    r.count_ = 0;
  }
  bool pins_memory() const {
    if constexpr (requires(const Net& n) { n.pins_memory(); }) return rails_[0]->pins_memory();
    return true;
  }
  // What a rendezvous tells the peer on c about the buffer p of region r: the key of
  // c's rail.
  std::pair<uint64_t, uint64_t> remote_ref(const Conn* c, const Region& r, const void* p) const {
    const auto& sub = r.sub_[c->rail];
    return {sub.remote_address(p), sub.key()};
  }
  uint64_t rndv_chunk(const Conn* c) const {
    if constexpr (requires(const Net& n) { n.rndv_chunk(c->inner); })
      return c->net->rndv_chunk(c->inner);
    return fabric::kDefaultRndvChunk;
  }
  uint32_t max_reads(const Conn* c) const {
    if constexpr (requires(const Net& n) { n.max_reads(c->inner); })
      return c->net->max_reads(c->inner);
    return UINT32_MAX;
  }

  int post_recvs(Conn* c, const fabric::RecvBuf* b, int n, const Region& r) {
    return c->net->post_recvs(c->inner, b, n, r.sub_[c->rail]);
  }
  int send(Conn* c, const fabric::Sge* sge, int n, uint32_t flags, uint64_t wr) {
    fabric::Sge own[3];
    if (n < 1 || n > 3) return RDMX_ERR_INVALID;
    for (int i = 0; i < n; ++i) {
      own[i] = sge[i];
      if (sge[i].desc) own[i].desc = static_cast<const Region*>(sge[i].desc)->sub_[c->rail].desc();
    }
    return c->net->send(c->inner, own, n, flags, wr);
  }
  int read(Conn* c, void* local, uint64_t len, const Region& r, uint64_t raddr, uint64_t rkey,
           uint64_t wr) {
    return c->net->read(c->inner, local, len, r.sub_[c->rail], raddr, rkey, wr);
  }

  // A shared receive queue: with one device only (open() refuses several).
  void enable_shared_receive() requires requires(Net& n) { n.enable_shared_receive(); }
  { shared_receive_ = true; }
  int post_shared_recv(void* buf, uint32_t len, const Region& r, uint64_t wr) requires
      requires(Net& n, const typename Net::Region& nr) {
    n.post_shared_recv(buf, len, nr, wr);
  }
  { return rails_[0]->post_shared_recv(buf, len, r.sub_[0], wr); }
  uint32_t shared_receive_depth() const requires requires(const Net& n) {
    n.shared_receive_depth();
  }
  { return rails_[0]->shared_receive_depth(); }
  int arm_shared_receive_limit(uint32_t n) requires requires(Net& f) {
    f.arm_shared_receive_limit(n);
  }
  { return rails_[0]->arm_shared_receive_limit(n); }

  template <class Sink>
  int progress(Sink& sink) {
    int n = 0;
    for (uint32_t i = 0; i < rails_.size(); ++i) {
      Relay<Sink> r{{sink}, this, i};
      int k = rails_[i]->progress(r);
      if (k < 0) return k;
      n += k;
    }
    return n;
  }
  // Sleeps on the one device; with several, in short turns (their wait objects are not
  // waited on together).
  int wait(int timeout_ms) {
    if (rails_.size() == 1) return rails_[0]->wait(timeout_ms);
    if (int rc = rails_[0]->wait(std::min(timeout_ms, 1))) return rc;
    for (size_t i = 1; i < rails_.size(); ++i)
      if (int rc = rails_[i]->wait(0)) return rc;
    return RDMX_OK;
  }

  size_t rail_count() const { return rails_.size(); }
  Net& rail(size_t i) { return *rails_[i]; }
  // With several devices, "verbs:rxe1": the fabric and the device c goes through
  // (rdmx_peer_fabric); null with one.
  const char* path_label(const Conn* c) const {
    return rails_.size() > 1 ? labels_[c->rail].c_str() : nullptr;
  }

 private:
  template <class Sink>
  struct Relay : fabric::Relay<Sink> {
    Fabric* self;
    uint32_t rail;
    void on_connect_request(typename Net::ConnRequest* r, const uint8_t* pdata, size_t len) {
      auto w = std::make_unique<ConnRequest>();
      w->inner = r;
      w->rail = rail;
      ConnRequest* raw = w.get();
      self->requests_.push_back(std::move(w));
      this->sink.on_connect_request(raw, pdata, len);
    }
  };

  void forget(ConnRequest* r) {
    std::erase_if(requests_, [r](auto& p) { return p.get() == r; });
  }

  std::vector<std::unique_ptr<Net>> rails_;
  std::vector<RailView> views_;
  std::vector<std::string> labels_;
  uint64_t spread_ = 0;
  int32_t rank_ = -1;
  bool shared_receive_ = false;
  std::vector<std::unique_ptr<Conn>> conns_;
  std::vector<std::unique_ptr<ConnRequest>> requests_;
};

}  // namespace rdmx::rails
