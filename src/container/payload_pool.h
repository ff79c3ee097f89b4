// Buffers for the payloads of unexpected eager messages, in power-of-two size
// classes, recycled instead of freed. The pool owns every buffer it made: those still
// out when it goes (messages never received) go with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace rdmx {

class PayloadPool {
 public:
  struct Buffer {
    uint8_t* data = nullptr;
    uint8_t size_class = 0;
  };
  Buffer get(size_t len);
  void put(Buffer b);
  ~PayloadPool();

 private:
  static constexpr int kClasses = 32;
  std::vector<uint8_t*> free_[kClasses];
  std::vector<uint8_t*> made_;  // every buffer, out or free
};

}  // namespace rdmx
