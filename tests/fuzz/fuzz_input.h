// What the fuzz targets share: a reader that takes a fuzzer's input front to back, so
// that seed inputs are plain byte layouts, and a check that stops the run on a broken
// invariant (libFuzzer then saves the input that broke it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

// An invariant of the code under test; a failure is a finding like a crash.
#define FUZZ_CHECK(cond)                                                                \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                     \
    }                                                                                   \
  } while (0)

namespace rdmx::fuzz {

// Fixed-size fields from the front of the input, little-endian; past the end every field
// reads as zero, so every input is a whole program for the target.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}

  size_t left() const { return size_t(end_ - p_); }
  bool empty() const { return p_ == end_; }

  uint8_t u8() { return uint8_t(take(1)); }
  uint16_t u16() { return uint16_t(take(2)); }
  uint32_t u32() { return uint32_t(take(4)); }
  uint64_t u64() { return take(8); }

  // Up to n bytes, copied into a buffer of exactly their size, so that the sanitizer
  // sees any read past what the code was given.
  std::vector<uint8_t> bytes(size_t n) {
    n = n < left() ? n : left();
    std::vector<uint8_t> v(p_, p_ + n);
    p_ += n;
    return v;
  }
  std::vector<uint8_t> rest() { return bytes(left()); }

 private:
  uint64_t take(size_t n) {
    uint64_t v = 0;
    n = n < left() ? n : left();
    if (n) std::memcpy(&v, p_, n);  // an empty input may come as a null pointer
    p_ += n;
    return v;
  }

  const uint8_t* p_;
  const uint8_t* end_;
};

}  // namespace rdmx::fuzz
