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
// Fills name from a peer's blob if it is an address this side can connect to: made for
// provider, with an endpoint name that suits addr_format (FI_SOCKADDR_IN...), which is
// what libfabric will read it as. False with err saying what was wrong and what is
// accepted otherwise. The blob comes from the peer: nothing in it is trusted.
bool decode_address(const uint8_t* blob, size_t len, const std::string& provider,
                    uint32_t addr_format, std::vector<uint8_t>& name, std::string& err);

// "192.0.2.1:4711", "[fe80::1]:4711", or "<N-byte address>".
std::string describe_sockaddr(const void* addr, size_t len);

}  // namespace rdmx::ofi
