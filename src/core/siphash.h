// SipHash-2-4 (Aumasson and Bernstein), a keyed pseudo-random function for short
// inputs: with a secret 128-bit key, its output is a message authentication code that
// an outsider can neither forge nor use to learn the key. rdmx uses it to prove
// membership of a job in connection private data and in the standalone bootstrap.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rdmx {

struct SipKey {
  uint64_t k0 = 0, k1 = 0;
};

// The 64-bit output.
uint64_t siphash64(const SipKey& key, const void* data, size_t len);
// The 128-bit output (SipHash-2-4-128), into out[16].
void siphash128(const SipKey& key, const void* data, size_t len, uint8_t out[16]);

// Compares n bytes in time that does not depend on where they differ.
bool equal_in_constant_time(const void* a, const void* b, size_t n);

}  // namespace rdmx
