// Copies of payload bytes on the message path. Most eager payloads are a few bytes: a
// call into memcpy (and the registers saved around it) costs more than the copy, so
// up to 32 bytes are copied here with at most two overlapping loads and stores.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace rdmx {

// Up to 16 bytes.
[[gnu::always_inline]] inline void copy_upto16(void* dst, const void* src, size_t n) {
  auto* d = static_cast<uint8_t*>(dst);
  auto* s = static_cast<const uint8_t*>(src);
  if (n >= 8) {
    uint64_t a, b;
    std::memcpy(&a, s, 8);
    std::memcpy(&b, s + n - 8, 8);
    std::memcpy(d, &a, 8);
    std::memcpy(d + n - 8, &b, 8);
  } else if (n >= 4) {
    uint32_t a, b;
    std::memcpy(&a, s, 4);
    std::memcpy(&b, s + n - 4, 4);
    std::memcpy(d, &a, 4);
    std::memcpy(d + n - 4, &b, 4);
  } else if (n) {
    uint8_t a = s[0], b = s[n / 2], c = s[n - 1];
    d[0] = a;
    d[n / 2] = b;
    d[n - 1] = c;
  }
}

[[gnu::always_inline]] inline void copy_bytes(void* dst, const void* src, size_t n) {
  auto* d = static_cast<uint8_t*>(dst);
  auto* s = static_cast<const uint8_t*>(src);
  if (n > 32) [[unlikely]] {
    std::memcpy(d, s, n);
  } else if (n > 16) {
    struct Block {
      uint64_t lo, hi;
    } a, b;
    std::memcpy(&a, s, 16);
    std::memcpy(&b, s + n - 16, 16);
    std::memcpy(d, &a, 16);
    std::memcpy(d + n - 16, &b, 16);
  } else {
    copy_upto16(d, s, n);
  }
}

// The same pointer, with what it points at hidden from the compiler. A message handed on
// from a small fixed buffer (a queue entry copied to the stack) has a length checked at
// run time; GCC's bounds analysis cannot follow that check through the engine's parsing,
// and under some optimisation levels reports the engine's branch for long payloads as
// reading past the buffer, a branch such a message never takes.
template <class T>
[[gnu::always_inline]] inline T* hide_bounds(T* p) {
  asm("" : "+r"(p));
  return p;
}

}  // namespace rdmx
