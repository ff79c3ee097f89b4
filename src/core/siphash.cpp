#include "core/siphash.h"

#include <cstring>

namespace rdmx {
namespace {

inline uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

struct State {
  uint64_t v0, v1, v2, v3;
  void round() {
    v0 += v1;
    v1 = rotl(v1, 13);
    v1 ^= v0;
    v0 = rotl(v0, 32);
    v2 += v3;
    v3 = rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = rotl(v1, 17);
    v1 ^= v2;
    v2 = rotl(v2, 32);
  }
  void absorb(uint64_t m) {
    v3 ^= m;
    round();
    round();
    v0 ^= m;
  }
  uint64_t fold() const { return v0 ^ v1 ^ v2 ^ v3; }
};

inline uint64_t load_le(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

// Initialises, compresses the input and absorbs the final word; wide: 128-bit output.
State compress(const SipKey& k, const void* data, size_t len, bool wide) {
  State s{0x736f6d6570736575ull ^ k.k0, 0x646f72616e646f6dull ^ k.k1, 0x6c7967656e657261ull ^ k.k0,
          0x7465646279746573ull ^ k.k1};
  if (wide) s.v1 ^= 0xee;
  auto* p = static_cast<const uint8_t*>(data);
  size_t whole = len & ~size_t(7);
  for (size_t i = 0; i < whole; i += 8) s.absorb(load_le(p + i, 8));
  s.absorb((uint64_t(len) << 56) | load_le(p + whole, len - whole));
  return s;
}

}  // namespace

uint64_t siphash64(const SipKey& key, const void* data, size_t len) {
  State s = compress(key, data, len, false);
  s.v2 ^= 0xff;
  for (int i = 0; i < 4; ++i) s.round();
  return s.fold();
}

void siphash128(const SipKey& key, const void* data, size_t len, uint8_t out[16]) {
  State s = compress(key, data, len, true);
  s.v2 ^= 0xee;
  for (int i = 0; i < 4; ++i) s.round();
  uint64_t lo = s.fold();
  s.v1 ^= 0xdd;
  for (int i = 0; i < 4; ++i) s.round();
  uint64_t hi = s.fold();
  for (int i = 0; i < 8; ++i) {
    out[i] = uint8_t(lo >> (8 * i));
    out[8 + i] = uint8_t(hi >> (8 * i));
  }
}

bool equal_in_constant_time(const void* a, const void* b, size_t n) {
  auto* x = static_cast<const volatile uint8_t*>(a);
  auto* y = static_cast<const volatile uint8_t*>(b);
  uint8_t d = 0;
  for (size_t i = 0; i < n; ++i) d |= uint8_t(x[i] ^ y[i]);
  return d == 0;
}

}  // namespace rdmx
