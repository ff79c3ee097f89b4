// Keys for memory regions where the provider takes the key rdmx asks for (its mr_mode
// has no FI_MR_PROV_KEY, as with tcp). A peer reads a region by naming its key, and
// with tcp any connected peer may read any region of the domain whose key it names:
// keys must not be guessable, so they are random, from getrandom(2).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace rdmx::ofi {

class RandomKeys {
 public:
  // key_bytes: the provider's mr_key_size; keys are cut to that many bytes (8 or more,
  // or 0 for unknown, keeps all 64 bits).
  void set_key_size(size_t key_bytes) {
    mask_ = key_bytes == 0 || key_bytes >= 8 ? ~uint64_t(0) : (uint64_t(1) << (8 * key_bytes)) - 1;
  }
  // The next key, or false with err if the kernel gave no random bytes.
  bool next(uint64_t& key, std::string& err);

 private:
  // Drawn 32 at a time: one system call per 32 registrations.
  static constexpr size_t kBatch = 32;
  uint64_t batch_[kBatch] = {};
  size_t left_ = 0;
  uint64_t mask_ = ~uint64_t(0);
};

}  // namespace rdmx::ofi
