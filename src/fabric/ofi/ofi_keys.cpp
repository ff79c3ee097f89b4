#include "fabric/ofi/ofi_keys.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

namespace rdmx::ofi {

bool RandomKeys::next(uint64_t& key, std::string& err) {
  if (left_ == 0) {
    // Up to 256 bytes come whole once the kernel's pool is initialised; before that
    // (early boot) this waits for it rather than hand out weak keys.
    ssize_t n;
    do {
      n = ::getrandom(batch_, sizeof batch_, 0);
    } while (n < 0 && errno == EINTR);
    if (n != ssize_t(sizeof batch_)) {
      err = "getrandom for memory region keys failed: " +
            std::string(n < 0 ? std::strerror(errno) : "a short read");
      return false;
    }
    left_ = kBatch;
  }
  key = batch_[--left_] & mask_;
  batch_[left_] = 0;  // a key handed out is not kept here
  return true;
}

}  // namespace rdmx::ofi
