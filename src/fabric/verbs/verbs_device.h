// The local side of the verbs backend: the RDMA device this context uses, the IP address
// rdma_cm reaches it through, what the device can do, and the objects every connection
// of the context shares: the event channel, the listening rdma_cm id, the protection
// domain, the completion queue and (RDMX_SRQ=1) the shared receive queue.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/settings.h"
#include "fabric/verbs/verbs_resource.h"

namespace rdmx::verbs {

// What the device and its port allow, as queried at open.
struct DeviceLimits {
  uint32_t max_qp_rd_atom = 0;       // READs a QP may serve at once (responder resources)
  uint32_t max_qp_init_rd_atom = 0;  // READs a QP may have outstanding (initiator depth)
  uint32_t max_qp_wr = 0;
  uint32_t max_sge = 0;
  uint32_t max_cqe = 0;
  uint32_t max_srq_wr = 0;
  uint32_t mtu = 0;  // the port's active MTU, bytes
  uint64_t max_msg_size = 0;
  uint8_t link_layer = 0;  // IBV_LINK_LAYER_*
};

// The bootstrap address blob: where a context listens and what its device can do, so
// that a connecting peer asks for read depths both devices accept.
struct WireAddress {
  uint32_t magic;
  uint8_t version;
  uint8_t family;  // 4 or 6
  uint16_t port;   // host byte order
  uint8_t ip[16];  // IPv4 in the first 4 bytes
  uint16_t max_qp_rd_atom;
  uint16_t max_qp_init_rd_atom;
  uint16_t mtu;
  uint16_t reserved;
  uint8_t gid[16];
};
static_assert(sizeof(WireAddress) == 48);

inline constexpr uint32_t kAddressMagic = 0x53425256;  // "VRBS"
inline constexpr uint8_t kAddressVersion = 1;

// Decodes a peer's blob; on failure fills err with what is wrong.
bool parse_address(const uint8_t* blob, size_t len, WireAddress& out, sockaddr_storage& dst,
                   std::string& err);
// "10.78.0.1:40123", for messages.
std::string format_address(const sockaddr* sa);
// The names of this machine's RDMA devices, in ibv_get_device_list's order.
std::vector<std::string> device_list();
// strerror of an errno value, or of a negated one as rdma_cm events carry.
std::string errno_text(int e);

class Device {
 public:
  Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // Finds the device (RDMX_VERBS_DEVICE: by name or IP address; else the nearest to the
  // calling thread's CPUs that has an IP address, see topology/nearest_device.h, and
  // without a known locality the first one with an IP address, in interface order), listens on an
  // ephemeral port of that address and creates the shared objects. Returns an RDMX_* code;
  // RDMX_ERR_NO_DEVICE when this machine has no usable RDMA device.
  int open(const Settings& s, std::string& err);

  rdma_event_channel* channel() const { return channel_.get(); }
  rdma_cm_id* listener() const { return listener_.get(); }
  ibv_context* context() const { return listener_->verbs; }
  ibv_pd* pd() const { return pd_.get(); }
  ibv_cq* cq() const { return cq_.get(); }
  // The completion queue's event channel (non-blocking), for sleeping until it has work.
  ibv_comp_channel* comp_channel() const { return comp_channel_.get(); }
  ibv_srq* srq() const { return srq_.get(); }
  uint32_t srq_depth() const { return srq_depth_; }
  const DeviceLimits& limits() const { return limits_; }
  const sockaddr* local_address() const { return reinterpret_cast<const sockaddr*>(&local_); }
  const std::string& name() const { return name_; }
  WireAddress wire_address() const;

  // Makes room in the completion queue for n more entries, growing it if needed, so
  // that it can never overflow; false (with err) when the device cannot.
  bool reserve_cq(uint32_t n, std::string& err);
  void release_cq(uint32_t n) { cq_used_ -= n; }

 private:
  int find_device(const std::string& want, const std::vector<std::string>& prefer,
                  std::string& err);
  void find_gid();

  EventChannel channel_;
  CmId listener_;
  Pd pd_;
  CompChannel comp_channel_;  // outlives the completion queue that reports to it
  Cq cq_;
  Srq srq_;
  uint32_t srq_depth_ = 0;
  uint32_t cq_used_ = 0;
  DeviceLimits limits_{};
  sockaddr_storage local_{};
  uint16_t port_ = 0;
  uint8_t gid_[16] = {};
  std::string name_;
};

}  // namespace rdmx::verbs
