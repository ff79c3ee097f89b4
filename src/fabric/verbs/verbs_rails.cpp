// The verbs backend's side of the rails fabric (fabric/rails/rails_fabric.h): which
// devices RDMX_VERBS_DEVICE asks for, and the IP addresses the path rule compares.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>

#include "fabric/verbs/verbs_fabric.h"
#include "topology/nearest_device.h"

namespace rdmx::verbs {
namespace {

rails::IpPrefix prefix_of(const sockaddr* sa, unsigned bits) {
  rails::IpPrefix p;
  if (sa->sa_family == AF_INET) {
    p.family = 4;
    std::memcpy(p.addr, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, 4);
    p.bits = uint8_t(std::min(bits, 32u));
  } else if (sa->sa_family == AF_INET6) {
    p.family = 6;
    std::memcpy(p.addr, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, 16);
    p.bits = uint8_t(std::min(bits, 128u));
  }
  return p;
}

unsigned mask_bits(const sockaddr* mask) {
  const uint8_t* b = nullptr;
  size_t n = 0;
  if (mask && mask->sa_family == AF_INET) {
    b = reinterpret_cast<const uint8_t*>(&reinterpret_cast<const sockaddr_in*>(mask)->sin_addr);
    n = 4;
  } else if (mask && mask->sa_family == AF_INET6) {
    b = reinterpret_cast<const uint8_t*>(&reinterpret_cast<const sockaddr_in6*>(mask)->sin6_addr);
    n = 16;
  }
  unsigned bits = 0;
  for (size_t i = 0; i < n; ++i) bits += unsigned(__builtin_popcount(b[i]));
  return bits;
}

}  // namespace

int Fabric::rail_specs(const Settings& s, std::vector<rails::RailSpec>& out, std::string& err) {
  out.clear();
  std::vector<std::string> wanted = topology::split_device_list(s.verbs_device);
  if (wanted.size() == 1 && wanted[0] != "all") {
    out.push_back({s, s.verbs_device, 0, false});  // one device, as named or the nearest
    return RDMX_OK;
  }
  bool all = wanted.size() == 1;
  std::vector<std::string> names = device_list();
  if (all) wanted = names;
  for (size_t i = 0; i < wanted.size(); ++i) {
    if (wanted[i].empty() || wanted[i] == "all") {
      err = "RDMX_VERBS_DEVICE=" + s.verbs_device +
            ": accepted are one device name or IP address, several separated by commas, or all";
      return RDMX_ERR_INVALID;
    }
    if (std::find(wanted.begin(), wanted.begin() + long(i), wanted[i]) !=
        wanted.begin() + long(i)) {
      err = "RDMX_VERBS_DEVICE=" + s.verbs_device + ": " + wanted[i] + " is named twice";
      return RDMX_ERR_INVALID;
    }
  }
  if (wanted.empty()) {
    err = "RDMX_VERBS_DEVICE=all: no RDMA device on this machine";
    return RDMX_ERR_NO_DEVICE;
  }
  if (wanted.size() > rails::kMaxRails) {
    err = "RDMX_VERBS_DEVICE=" + s.verbs_device + ": " + std::to_string(wanted.size()) +
          " devices; a context uses at most " + std::to_string(rails::kMaxRails);
    return RDMX_ERR_INVALID;
  }
  // Locality tiers: the devices tied for nearest to this rank's CPUs are tier 0.
  Settings any = s;
  any.verbs_device.clear();
  topology::DeviceChoice choice = topology::nearest_device(names, any);
  auto tier_of = [&](const std::string& name) -> unsigned {
    size_t i = size_t(std::find(names.begin(), names.end(), name) - names.begin());
    return i < names.size() ? topology::device_tier(choice, i) : 0;  // an IP address: unknown
  };
  for (const std::string& w : wanted) {
    rails::RailSpec spec{s, w, tier_of(w), all};
    spec.settings.verbs_device = w;
    out.push_back(std::move(spec));
  }
  // The nearest first: their order is the order of the rails.
  std::stable_sort(out.begin(), out.end(), [](const rails::RailSpec& a, const rails::RailSpec& b) {
    return a.tier < b.tier;
  });
  return RDMX_OK;
}

bool Fabric::address_prefix(const uint8_t* addr, size_t len, rails::IpPrefix& out) {
  WireAddress a;
  sockaddr_storage dst;
  std::string ignored;
  if (!parse_address(addr, len, a, dst, ignored)) return false;
  out = prefix_of(reinterpret_cast<const sockaddr*>(&dst), 128);
  return true;
}

rails::IpPrefix Fabric::local_prefix() const {
  const sockaddr* local = dev_.local_address();
  unsigned bits = local->sa_family == AF_INET ? 32 : 128;
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) == 0) {
    for (ifaddrs* i = all; i; i = i->ifa_next) {
      if (!i->ifa_addr || i->ifa_addr->sa_family != local->sa_family) continue;
      rails::IpPrefix here = prefix_of(i->ifa_addr, 128), mine = prefix_of(local, 128);
      if (std::memcmp(here.addr, mine.addr, 16) == 0) {
        bits = mask_bits(i->ifa_netmask);
        break;
      }
    }
    freeifaddrs(all);
  }
  return prefix_of(local, bits);
}

}  // namespace rdmx::verbs
