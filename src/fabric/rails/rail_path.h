// Which of this context's devices (rails) a connection to a peer goes through, and to
// which of the peer's devices. A pure function of plain values, so that the rule is
// tested without devices; rails_fabric.h applies it.
//
// The rule, in order (a device that failed is left out while another one is up):
//   1. Reachable first: pairs whose two addresses lie in the subnet of this side's
//      device (a rail of a multi-rail cluster is its own subnet; a device of another
//      rail would be reached, if at all, through a router). When no pair shares a
//      subnet, every pair is a candidate (a routed network).
//   2. Near first: devices of the best locality tier (tier 0: nearest to the rank's
//      CPUs by PCI locality and NUMA distance; topology/device_choice.h).
//   3. Spread: the candidate device with the fewest connections, so that the peers of
//      a rank share its equally near devices; ties go to the lower index.
//   4. On the peer's side, when both sides have several devices, the candidate address
//      of the same index as the device chosen (rail k to rail k); else one picked by
//      `spread` (a value that differs between contexts, so that single-device ranks
//      spread over the devices of a multi-device peer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rdmx::rails {

// An IPv4 or IPv6 address with a prefix length (bits = 32 or 128 for a single address).
struct IpPrefix {
  uint8_t family = 0;  // 4 or 6; 0 = unknown
  uint8_t bits = 0;
  uint8_t addr[16] = {};
  // Whether ip (of the same family) lies in this prefix.
  bool contains(const IpPrefix& ip) const;
  std::string text() const;  // "10.78.1.2/24"
};

// One of this context's devices, as the rule sees it.
struct RailView {
  IpPrefix local;      // its address and subnet
  unsigned tier = 0;   // 0 = nearest
  uint32_t conns = 0;  // connections through it, made and not yet released
  bool down = false;   // the device failed: no new connection through it
};

struct Path {
  size_t rail = 0;  // this side's device
  size_t peer = 0;  // the peer's address
};

// mine and peer are not empty.
Path choose_path(const std::vector<RailView>& mine, const std::vector<IpPrefix>& peer,
                 uint64_t spread);

}  // namespace rdmx::rails
