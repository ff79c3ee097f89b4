#include "fabric/ofi/ofi_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <sys/socket.h>

#include <cstring>

namespace rdmx::ofi {
namespace {

constexpr uint32_t kAddrMagic = 0x3149464f;  // "OFI1"
constexpr size_t kProviderChars = 16;

struct AddrHeader {
  uint32_t magic;
  uint16_t name_len;
  uint16_t reserved;
  char provider[kProviderChars];
};

// Longest endpoint name taken for a format that is not a sockaddr: fi_getname's buffer
// on the listening side (ofi_fabric.cpp) is no larger.
constexpr size_t kMaxOtherName = 128;

// What an endpoint name of addr_format must be, in words.
std::string accepted_names(uint32_t addr_format) {
  std::string in = std::to_string(sizeof(sockaddr_in)) + "-byte sockaddr_in (AF_INET)";
  std::string in6 = std::to_string(sizeof(sockaddr_in6)) + "-byte sockaddr_in6 (AF_INET6)";
  switch (addr_format) {
    case FI_SOCKADDR_IN: return "a " + in;
    case FI_SOCKADDR_IN6: return "a " + in6;
    case FI_SOCKADDR: return "a " + in + " or a " + in6;
    default: return "1 to " + std::to_string(kMaxOtherName) + " bytes";
  }
}

// Whether a sockaddr format takes a name of this family and size.
bool name_fits(uint32_t addr_format, const std::vector<uint8_t>& name, sa_family_t& family) {
  bool in_ok = addr_format == FI_SOCKADDR_IN || addr_format == FI_SOCKADDR;
  bool in6_ok = addr_format == FI_SOCKADDR_IN6 || addr_format == FI_SOCKADDR;
  if (!in_ok && !in6_ok) return name.size() <= kMaxOtherName;
  if (name.size() < sizeof family) return false;
  std::memcpy(&family, name.data(), sizeof family);
  return (in_ok && family == AF_INET && name.size() == sizeof(sockaddr_in)) ||
         (in6_ok && family == AF_INET6 && name.size() == sizeof(sockaddr_in6));
}

}  // namespace

std::string fi_error(const char* call, int rc) {
  return std::string(call) + ": " + fi_strerror(rc < 0 ? -rc : rc);
}

std::vector<uint8_t> encode_address(const std::string& provider, const void* name, size_t len) {
  AddrHeader h{};
  h.magic = kAddrMagic;
  h.name_len = uint16_t(len);
  std::strncpy(h.provider, provider.c_str(), kProviderChars - 1);
  std::vector<uint8_t> out(sizeof h + len);
  std::memcpy(out.data(), &h, sizeof h);
  std::memcpy(out.data() + sizeof h, name, len);
  return out;
}

bool decode_address(const uint8_t* blob, size_t len, const std::string& provider,
                    uint32_t addr_format, std::vector<uint8_t>& name, std::string& err) {
  AddrHeader h{};
  if (!blob || len < sizeof h) {
    err = "an address of " + std::to_string(len) + " bytes is not a libfabric address";
    return false;
  }
  std::memcpy(&h, blob, sizeof h);
  if (h.magic != kAddrMagic) {
    err = "the address is not a libfabric address (it was made by another fabric backend)";
    return false;
  }
  if (sizeof h + h.name_len != len) {
    err = "a libfabric address of " + std::to_string(len) + " bytes announces a " +
          std::to_string(h.name_len) + "-byte endpoint name";
    return false;
  }
  h.provider[kProviderChars - 1] = '\0';
  if (h.provider != provider.substr(0, kProviderChars - 1)) {  // as encode_address cut it
    err = "the peer's address is for libfabric provider '" + std::string(h.provider) +
          "' but this side uses '" + provider +
          "' (RDMX_OFI_PROVIDER must be the same on every rank)";
    return false;
  }
  std::string accepted = "; provider '" + provider + "' accepts " + accepted_names(addr_format);
  if (h.name_len == 0) {
    err = "the peer's libfabric address has an empty (0-byte) endpoint name" + accepted;
    return false;
  }
  name.assign(blob + sizeof h, blob + len);
  sa_family_t family = AF_UNSPEC;
  if (!name_fits(addr_format, name, family)) {
    err = "the peer's libfabric address has a " + std::to_string(name.size()) +
          "-byte endpoint name" +
          (family != AF_UNSPEC ? " of address family " + std::to_string(family) : "") + accepted;
    name.clear();
    return false;
  }
  return true;
}

std::string describe_sockaddr(const void* addr, size_t len) {
  if (!addr || len == 0) return "<empty address>";
  char ip[INET6_ADDRSTRLEN] = {};
  sockaddr_storage ss{};
  std::memcpy(&ss, addr, len < sizeof ss ? len : sizeof ss);
  if (ss.ss_family == AF_INET && len >= sizeof(sockaddr_in)) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
    return std::string(ip) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (ss.ss_family == AF_INET6 && len >= sizeof(sockaddr_in6)) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip);
    return "[" + std::string(ip) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return "<" + std::to_string(len) + "-byte address>";
}

}  // namespace rdmx::ofi
