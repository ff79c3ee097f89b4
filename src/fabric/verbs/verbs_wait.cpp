// Sleeping until the device has something: the completion channel, armed with
// ibv_req_notify_cq one call before the sleep (so that the caller polls the queue once
// more after arming and nothing that arrived in between is slept through), and the
// rdma_cm event channel, and the device's asynchronous event descriptor; and the
// busy loop's look at the last two once a tick.
#include <poll.h>

#include <cerrno>

#include "fabric/verbs/verbs_fabric.h"

namespace rdmx::verbs {

int Fabric::wait(int timeout_ms) {
  if (timeout_ms <= 0 || !pending_.empty() || unsettled_) return RDMX_OK;
  if (!cq_armed_) {
    if (ibv_req_notify_cq(dev_.cq(), 0)) return RDMX_ERR_FABRIC;
    cq_armed_ = true;
    return RDMX_OK;
  }
  ibv_comp_channel* cc = dev_.comp_channel();
  pollfd fds[3] = {
      {cc->fd, POLLIN, 0}, {dev_.channel()->fd, POLLIN, 0}, {dev_.context()->async_fd, POLLIN, 0}};
  if (poll(fds, 3, timeout_ms) < 0 && errno != EINTR) return RDMX_ERR_FABRIC;
  if (fds[2].revents & POLLIN) want_device_events(DeviceEvents::Readable);
  if (fds[0].revents & POLLIN) {
    ibv_cq* cq = nullptr;
    void* ctx = nullptr;
    if (ibv_get_cq_event(cc, &cq, &ctx) == 0) {
      ibv_ack_cq_events(cq, 1);
      cq_armed_ = false;
    }
  }
  if (fds[1].revents & POLLIN) cm_kick_ = true;
  return RDMX_OK;
}

void Fabric::look_at_channels() {
  ibv_context* ctx = dev_.context();
  pollfd fds[2] = {{dev_.channel()->fd, POLLIN, 0}, {ctx ? ctx->async_fd : -1, POLLIN, 0}};
  if (poll(fds, 2, 0) <= 0) return;
  if (fds[0].revents & POLLIN) cm_kick_ = true;
  if (fds[1].revents & POLLIN) want_device_events(DeviceEvents::Readable);
}

}  // namespace rdmx::verbs
