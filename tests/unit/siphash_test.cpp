// SipHash-2-4 against the reference vectors of its authors (key 00 01 .. 0f, messages
// 00 01 .. n-1).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "core/siphash.h"

namespace rdmx {
namespace {

std::string hex(const uint8_t* p, size_t n) {
  std::string s;
  char b[3];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(b, sizeof b, "%02x", p[i]);
    s += b;
  }
  return s;
}

TEST(SipHash, MatchesTheReferenceVectors) {
  SipKey k{0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull};
  uint8_t msg[64];
  for (int i = 0; i < 64; ++i) msg[i] = uint8_t(i);
  auto h64 = [&](size_t n) {
    uint64_t h = siphash64(k, msg, n);
    uint8_t b[8];
    for (int i = 0; i < 8; ++i) b[i] = uint8_t(h >> (8 * i));
    return hex(b, 8);
  };
  EXPECT_EQ(h64(0), "310e0edd47db6f72");
  EXPECT_EQ(h64(1), "fd67dc93c539f874");
  EXPECT_EQ(h64(63), "724506eb4c328a95");
  uint8_t out[16];
  siphash128(k, msg, 0, out);
  EXPECT_EQ(hex(out, 16), "a3817f04ba25a8e66df67214c7550293");
}

TEST(SipHash, ComparesInConstantTimeCorrectly) {
  uint8_t a[12] = {1, 2, 3}, b[12] = {1, 2, 3};
  EXPECT_TRUE(equal_in_constant_time(a, b, sizeof a));
  b[11] = 1;
  EXPECT_FALSE(equal_in_constant_time(a, b, sizeof a));
}

}  // namespace
}  // namespace rdmx
