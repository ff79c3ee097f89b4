// Sleeping until the provider has something: the completion and event queues' file
// descriptors, armed by fi_trywait so that nothing that arrived before the sleep is
// slept through.
#include <poll.h>
#include <rdma/fi_errno.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>

#include "fabric/ofi/ofi_fabric.h"
#include "rdmx/rdmx.h"

namespace rdmx::ofi {

int Fabric::wait(int timeout_ms) {
  // Whatever this wakes for, the next progress looks at both queues: also after a wait
  // of 0, which a composite fabric makes while it sleeps on shared memory's queues.
  eq_due();
  if (timeout_ms <= 0 || !deferred_.empty()) return RDMX_OK;
  if (cq_fd_ < 0) {
    // No wait object: give the processor away briefly rather than spin.
    std::this_thread::sleep_for(std::chrono::microseconds(std::min(timeout_ms, 1) * 1000));
    return RDMX_OK;
  }
  fid_t fids[2] = {cq_.fid(), eq_.fid()};
  int n = eq_fd_ >= 0 ? 2 : 1;
  int rc = fi_trywait(fabric_.get(), fids, n);
  if (rc == -FI_EAGAIN) return RDMX_OK;  // something is ready: progress finds it
  if (rc) return RDMX_ERR_FABRIC;
  pollfd fds[2] = {{cq_fd_, POLLIN, 0}, {eq_fd_, POLLIN, 0}};
  // Without an event queue descriptor, connection events are looked for every 10 ms.
  if (poll(fds, nfds_t(n), eq_fd_ >= 0 ? timeout_ms : std::min(timeout_ms, 10)) < 0 &&
      errno != EINTR)
    return RDMX_ERR_FABRIC;
  return RDMX_OK;
}

}  // namespace rdmx::ofi
