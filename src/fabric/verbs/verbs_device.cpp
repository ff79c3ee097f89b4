#include "fabric/verbs/verbs_device.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/log.h"
#include "rdmx/rdmx.h"
#include "topology/nearest_device.h"

namespace rdmx::verbs {
namespace {

constexpr uint32_t kInitialCq = 1024;
constexpr uint32_t kSrqDepth = 4096;
// Connect requests that may wait to be taken: every rank of a job connecting to one at
// once (an alltoall's first round) must not find the queue full. The kernel takes at most
// net.rdma_ucm.max_backlog of it (1024 by default); libfabric's verbs provider needed
// 4096 to reach 2,688 ranks at 192 per node (ofiwg/libfabric#5923).
constexpr int kListenBacklog = 4096;

uint32_t mtu_bytes(ibv_mtu m) {
  switch (m) {
    case IBV_MTU_256: return 256;
    case IBV_MTU_512: return 512;
    case IBV_MTU_1024: return 1024;
    case IBV_MTU_2048: return 2048;
    case IBV_MTU_4096: return 4096;
  }
  return 0;
}

// The IP addresses of this machine's interfaces that are up, IPv4 first, loopback and
// link-local IPv6 left out: the candidates for an RDMA device's address.
std::vector<sockaddr_storage> candidate_addresses() {
  std::vector<sockaddr_storage> v4, v6;
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) != 0) return {};
  for (ifaddrs* i = all; i; i = i->ifa_next) {
    if (!i->ifa_addr || !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) continue;
    sockaddr_storage ss{};
    if (i->ifa_addr->sa_family == AF_INET) {
      std::memcpy(&ss, i->ifa_addr, sizeof(sockaddr_in));
      v4.push_back(ss);
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      auto* a6 = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
      if (IN6_IS_ADDR_LINKLOCAL(&a6->sin6_addr)) continue;
      std::memcpy(&ss, a6, sizeof(sockaddr_in6));
      v6.push_back(ss);
    }
  }
  freeifaddrs(all);
  v4.insert(v4.end(), v6.begin(), v6.end());
  return v4;
}

// The RDMA devices of this machine, "" if none.
std::string device_names() {
  std::string names;
  for (const std::string& n : device_list()) names += (names.empty() ? "" : ", ") + n;
  return names;
}

// Where d stands in prefer (the topology's order), prefer.size() when absent.
size_t preference(const std::vector<std::string>& prefer, const char* d) {
  return size_t(std::find(prefer.begin(), prefer.end(), d) - prefer.begin());
}

// Why no device was usable, in words that say what to do about it.
std::string no_device_reason() {
  std::string names = device_names();
  if (names.empty())
    return "no RDMA device on this machine (ibv_get_device_list found none; Soft-RoCE: "
           "rdma link add rxe0 type rxe netdev eth0)";
  return "RDMA device(s) " + names +
         " found, but none has an IP address rdma_cm can bind (configure an address on the "
         "device's network interface)";
}

}  // namespace

std::vector<std::string> device_list() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  std::vector<std::string> names;
  for (int i = 0; list && i < n; ++i) names.push_back(ibv_get_device_name(list[i]));
  if (list) ibv_free_device_list(list);
  return names;
}

std::string errno_text(int e) { return std::strerror(e < 0 ? -e : e); }

std::string format_address(const sockaddr* sa) {
  char ip[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (sa->sa_family == AF_INET) {
    auto* a = reinterpret_cast<const sockaddr_in*>(sa);
    inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
    port = ntohs(a->sin_port);
    return std::string(ip) + ":" + std::to_string(port);
  }
  if (sa->sa_family == AF_INET6) {
    auto* a = reinterpret_cast<const sockaddr_in6*>(sa);
    inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
    port = ntohs(a->sin6_port);
  }
  return "[" + std::string(ip) + "]:" + std::to_string(port);
}

bool parse_address(const uint8_t* blob, size_t len, WireAddress& out, sockaddr_storage& dst,
                   std::string& err) {
  if (!blob || len != sizeof out) {
    err = "a verbs address is " + std::to_string(sizeof out) + " bytes, this one " +
          std::to_string(len) + " (is the peer running another rdmx fabric?)";
    return false;
  }
  std::memcpy(&out, blob, sizeof out);
  if (out.magic != kAddressMagic || out.version != kAddressVersion) {
    err = "not a verbs address of version " + std::to_string(kAddressVersion);
    return false;
  }
  dst = {};
  if (out.family == 4) {
    auto* a = reinterpret_cast<sockaddr_in*>(&dst);
    a->sin_family = AF_INET;
    a->sin_port = htons(out.port);
    std::memcpy(&a->sin_addr, out.ip, 4);
  } else if (out.family == 6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&dst);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(out.port);
    std::memcpy(&a->sin6_addr, out.ip, 16);
  } else {
    err = "address family " + std::to_string(out.family) + " in a verbs address";
    return false;
  }
  if (out.port == 0 || out.max_qp_rd_atom == 0 || out.max_qp_init_rd_atom == 0) {
    err = "a verbs address with port " + std::to_string(out.port) + " and read depths " +
          std::to_string(out.max_qp_rd_atom) + "/" + std::to_string(out.max_qp_init_rd_atom);
    return false;
  }
  return true;
}

// want: a device name, an IP address, or "" for a device reachable by IP: the first of
// prefer that is, else the first in interface order.
int Device::find_device(const std::string& want, const std::vector<std::string>& prefer,
                        std::string& err) {
  sockaddr_storage want_ip{};
  bool by_ip = false;
  if (!want.empty()) {
    auto* a4 = reinterpret_cast<sockaddr_in*>(&want_ip);
    auto* a6 = reinterpret_cast<sockaddr_in6*>(&want_ip);
    if (inet_pton(AF_INET, want.c_str(), &a4->sin_addr) == 1) {
      a4->sin_family = AF_INET;
      by_ip = true;
    } else if (inet_pton(AF_INET6, want.c_str(), &a6->sin6_addr) == 1) {
      a6->sin6_family = AF_INET6;
      by_ip = true;
    }
  }
  std::vector<sockaddr_storage> candidates =
      by_ip ? std::vector<sockaddr_storage>{want_ip} : candidate_addresses();
  size_t best = prefer.size();
  for (const sockaddr_storage& ss : candidates) {
    rdma_cm_id* raw = nullptr;
    if (rdma_create_id(channel_.get(), &raw, nullptr, RDMA_PS_TCP)) {
      err = std::string("rdma_create_id failed: ") + std::strerror(errno);
      return RDMX_ERR_FABRIC;
    }
    CmId id(raw);
    sockaddr_storage bind_to = ss;
    if (rdma_bind_addr(id.get(), reinterpret_cast<sockaddr*>(&bind_to)) || !id->verbs) continue;
    const char* name = ibv_get_device_name(id->verbs->device);
    if (!want.empty() && !by_ip && want != name) continue;
    size_t rank = preference(prefer, name);
    if (listener_ && rank >= best) continue;
    best = rank;
    listener_ = std::move(id);
    local_ = ss;
    if (best == 0 || prefer.empty()) break;
  }
  if (listener_) return RDMX_OK;
  if (want.empty()) {
    err = no_device_reason();
  } else {
    std::string names = device_names();
    err = "RDMX_VERBS_DEVICE=" + want + ": no RDMA device of that name or address that rdma_cm " +
          "can bind (" + (names.empty() ? "no RDMA device here" : "devices here: " + names) + ")";
  }
  return RDMX_ERR_NO_DEVICE;
}

void Device::find_gid() {
  ibv_port_attr pa{};
  if (ibv_query_port(context(), listener_->port_num, &pa) || pa.gid_tbl_len <= 0) return;
  std::vector<ibv_gid_entry> entries(size_t(pa.gid_tbl_len));
  ssize_t n = ibv_query_gid_table(context(), entries.data(), entries.size(), 0);
  uint8_t want[16] = {};
  if (local_.ss_family == AF_INET) {
    want[10] = want[11] = 0xff;
    std::memcpy(want + 12, &reinterpret_cast<const sockaddr_in*>(&local_)->sin_addr, 4);
  } else {
    std::memcpy(want, &reinterpret_cast<const sockaddr_in6*>(&local_)->sin6_addr, 16);
  }
  for (ssize_t i = 0; i < n; ++i) {
    const ibv_gid_entry& e = entries[size_t(i)];
    if (e.port_num != listener_->port_num) continue;
    if (std::memcmp(e.gid.raw, want, 16) == 0) {
      std::memcpy(gid_, e.gid.raw, 16);
      return;
    }
  }
  ibv_gid g{};
  if (ibv_query_gid(context(), listener_->port_num, 0, &g) == 0) std::memcpy(gid_, g.raw, 16);
}

int Device::open(const Settings& s, std::string& err) {
  channel_.reset(rdma_create_event_channel());
  if (!channel_) {
    int e = errno;
    err = "cannot open the rdma_cm event channel (" + std::string(std::strerror(e)) +
          "): " + no_device_reason();
    return RDMX_ERR_NO_DEVICE;
  }
  int fl = fcntl(channel_->fd, F_GETFL);
  if (fl < 0 || fcntl(channel_->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
    err =
        std::string("cannot make the rdma_cm event channel non-blocking: ") + std::strerror(errno);
    return RDMX_ERR_FABRIC;
  }
  std::vector<std::string> prefer;
  if (s.verbs_device.empty()) {
    std::vector<std::string> names = device_list();
    topology::DeviceChoice choice = topology::nearest_device(names, s);
    for (size_t i : choice.order) prefer.push_back(names[i]);
    RDMX_LOG(LogLevel::Info, -1, "verbs: device choice: %s", choice.why.c_str());
  }
  if (int rc = find_device(s.verbs_device, prefer, err)) return rc;
  name_ = ibv_get_device_name(context()->device);
  if (!prefer.empty() && name_ != prefer[0])
    RDMX_LOG(LogLevel::Info, -1, "verbs: %s has no IP address rdma_cm can bind; using %s",
             prefer[0].c_str(), name_.c_str());
  if (rdma_listen(listener_.get(), kListenBacklog)) {
    err = "rdma_listen on " + format_address(local_address()) + " failed: " + std::strerror(errno);
    return RDMX_ERR_FABRIC;
  }
  port_ = ntohs(rdma_get_src_port(listener_.get()));

  ibv_device_attr da{};
  ibv_port_attr pa{};
  if (ibv_query_device(context(), &da) || ibv_query_port(context(), listener_->port_num, &pa)) {
    err = "querying " + name_ + " failed: " + std::strerror(errno);
    return RDMX_ERR_FABRIC;
  }
  limits_.max_qp_rd_atom = uint32_t(da.max_qp_rd_atom);
  limits_.max_qp_init_rd_atom = uint32_t(da.max_qp_init_rd_atom);
  limits_.max_qp_wr = uint32_t(da.max_qp_wr);
  limits_.max_sge = uint32_t(da.max_sge);
  limits_.max_cqe = uint32_t(da.max_cqe);
  limits_.max_srq_wr = uint32_t(da.max_srq_wr);
  limits_.mtu = mtu_bytes(pa.active_mtu);
  limits_.max_msg_size = pa.max_msg_sz;
  limits_.link_layer = pa.link_layer;
  if (pa.state != IBV_PORT_ACTIVE) {
    err = name_ + " port " + std::to_string(listener_->port_num) + " is not active";
    return RDMX_ERR_NO_DEVICE;
  }
  find_gid();

  pd_.reset(ibv_alloc_pd(context()));
  if (!pd_) {
    err = "ibv_alloc_pd on " + name_ + " failed: " + std::strerror(errno);
    return RDMX_ERR_NO_MEMORY;
  }
  comp_channel_.reset(ibv_create_comp_channel(context()));
  if (!comp_channel_) {
    err = "ibv_create_comp_channel on " + name_ + " failed: " + std::strerror(errno);
    return RDMX_ERR_FABRIC;
  }
  fl = fcntl(comp_channel_->fd, F_GETFL);
  if (fl < 0 || fcntl(comp_channel_->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
    err =
        "cannot make the completion channel of " + name_ + " non-blocking: " + std::strerror(errno);
    return RDMX_ERR_FABRIC;
  }
  uint32_t cqe = std::min(kInitialCq, limits_.max_cqe);
  cq_.reset(ibv_create_cq(context(), int(cqe), nullptr, comp_channel_.get(), 0));
  if (!cq_) {
    err = "ibv_create_cq of " + std::to_string(cqe) + " entries on " + name_ +
          " failed: " + std::strerror(errno);
    return RDMX_ERR_NO_MEMORY;
  }
  // A device without shared receive queues, where the job's size chose one (RDMX_SRQ=-1):
  // receives per connection (srq_depth() 0 tells the engine).
  if (s.srq > 0 && !(s.srq_auto && limits_.max_srq_wr == 0)) {
    srq_depth_ = std::min(kSrqDepth, limits_.max_srq_wr);
    if (!reserve_cq(srq_depth_, err)) return RDMX_ERR_NO_MEMORY;
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = srq_depth_;
    sa.attr.max_sge = 1;
    srq_.reset(ibv_create_srq(pd_.get(), &sa));
    if (!srq_) {
      err = "ibv_create_srq of " + std::to_string(srq_depth_) + " entries on " + name_ +
            " failed: " + std::strerror(errno);
      return RDMX_ERR_NO_MEMORY;
    }
    srq_depth_ = sa.attr.max_wr;
  }
  return RDMX_OK;
}

bool Device::reserve_cq(uint32_t n, std::string& err) {
  uint32_t need = cq_used_ + n;
  if (need > uint32_t(cq_->cqe)) {
    uint32_t want = std::min(std::max(need, uint32_t(cq_->cqe) * 2), limits_.max_cqe);
    if (want < need || ibv_resize_cq(cq_.get(), int(want))) {
      err = "the completion queue of " + name_ + " cannot grow to " + std::to_string(need) +
            " entries (device limit " + std::to_string(limits_.max_cqe) + ")";
      return false;
    }
  }
  cq_used_ = need;
  return true;
}

WireAddress Device::wire_address() const {
  WireAddress a{};
  a.magic = kAddressMagic;
  a.version = kAddressVersion;
  if (local_.ss_family == AF_INET) {
    a.family = 4;
    std::memcpy(a.ip, &reinterpret_cast<const sockaddr_in*>(&local_)->sin_addr, 4);
  } else {
    a.family = 6;
    std::memcpy(a.ip, &reinterpret_cast<const sockaddr_in6*>(&local_)->sin6_addr, 16);
  }
  a.port = port_;
  a.max_qp_rd_atom = uint16_t(std::min<uint32_t>(limits_.max_qp_rd_atom, 0xffff));
  a.max_qp_init_rd_atom = uint16_t(std::min<uint32_t>(limits_.max_qp_init_rd_atom, 0xffff));
  a.mtu = uint16_t(limits_.mtu);
  std::memcpy(a.gid, gid_, 16);
  return a;
}

}  // namespace rdmx::verbs
