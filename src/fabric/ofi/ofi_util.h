// Small helpers of the libfabric backend: error text and the address blob.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rdmx::ofi {

// "call: <fi_strerror>" for a negative libfabric return code.
std::string fi_error(const char* call, int rc);

// The address blob: a header naming the provider, then the provider's address of the
// passive endpoint (a sockaddr for tcp and verbs).
std::vector<uint8_t> encode_address(const std::string& provider, const void* name, size_t len);
// Fills provider and name from a blob; false with err in words if it is not one.
bool decode_address(const uint8_t* blob, size_t len, std::string& provider,
                    std::vector<uint8_t>& name, std::string& err);

// "192.0.2.1:4711", "[fe80::1]:4711", or "<N-byte address>".
std::string describe_sockaddr(const void* addr, size_t len);

}  // namespace rdmx::ofi
