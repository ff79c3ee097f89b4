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

bool decode_address(const uint8_t* blob, size_t len, std::string& provider,
                    std::vector<uint8_t>& name, std::string& err) {
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
  if (h.name_len == 0) {
    err = "a libfabric address without an endpoint name";
    return false;
  }
  h.provider[kProviderChars - 1] = '\0';
  provider = h.provider;
  name.assign(blob + sizeof h, blob + len);
  return true;
}

std::string describe_sockaddr(const void* addr, size_t len) {
  char ip[INET6_ADDRSTRLEN] = {};
  sockaddr_storage ss{};
  if (len) std::memcpy(&ss, addr, len < sizeof ss ? len : sizeof ss);  // addr may be null
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
