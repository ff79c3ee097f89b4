// Page-aligned memory for buffers that get registered with a fabric.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>

namespace rdmx {

struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<uint8_t[], FreeDeleter>;

inline AlignedBuffer alloc_aligned(size_t bytes) {
  size_t n = (bytes + 4095) & ~size_t(4095);
  return AlignedBuffer(static_cast<uint8_t*>(std::aligned_alloc(4096, n ? n : 4096)));
}

}  // namespace rdmx
