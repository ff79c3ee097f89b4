// Buffers for the payloads of unexpected eager messages, in power-of-two size
// classes, recycled instead of freed.
//
// The pool owns every buffer it has handed out, not only those given back: a message
// that is never received (still queued, or claimed by a matched probe and never
// received) keeps its buffer until the pool goes, with the engine, at finalize.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rdmx {

class PayloadPool {
 public:
  struct Buffer {
    uint8_t* data = nullptr;
    uint8_t size_class = 0;
  };
  PayloadPool() = default;
  PayloadPool(const PayloadPool&) = delete;
  PayloadPool& operator=(const PayloadPool&) = delete;
  ~PayloadPool();

  Buffer get(size_t len);
  void put(Buffer b);

 private:
  static constexpr int kClasses = 32;
  std::vector<uint8_t*> free_[kClasses];
  std::vector<uint8_t*> all_;
};

}  // namespace rdmx
