// What this context does with the device's asynchronous events (verbs_async.h): a
// queue pair, port or device failure ends the connections it touches at once, with a
// message naming the device, the port and the event, instead of leaving them to time
// out; COMM_EST is passed to rdma_cm; the rest is logged.
#include <poll.h>

#include <chrono>
#include <string>

#include "core/log.h"
#include "fabric/verbs/verbs_fabric.h"

namespace rdmx::verbs {

void Fabric::take_async_events(bool read_device) {
  device_events_ = DeviceEvents::None;
  ibv_context* ctx = dev_.context();
  if (!ctx) return;
  async_events::poll(ctx, this, async_inbox_, read_device);
  for (const AsyncEvent& e : async_inbox_) on_async_event(e);
}

// A work request failed. The kernel queues a port's events for the process to read, so
// a request that failed because the link went down can complete before the port's
// event can be read, most of all on a busy host; a software device's send fails (a
// local queue pair error) even before its port is marked down. So: if the port is down,
// or the error is local, wait a bounded time for the port's event (once per fall of
// the port: a driver that raises none costs one wait, not one per connection).
void Fabric::take_async_events_after_error(const Conn* c, ibv_wc_status status) {
  take_async_events();
  ibv_context* ctx = dev_.context();
  if (c->remote_gone || port_event_awaited_ || !ctx) return;
  uint8_t port = c->id && c->id->port_num ? c->id->port_num
                 : dev_.listener()        ? dev_.listener()->port_num
                                          : 1;
  auto port_up = [&] {
    ibv_port_attr pa{};
    return ibv_query_port(ctx, port ? port : 1, &pa) != 0 || pa.state == IBV_PORT_ACTIVE;
  };
  if (status != IBV_WC_LOC_QP_OP_ERR && port_up()) return;
  using clock = std::chrono::steady_clock;
  constexpr auto kEventBound = std::chrono::milliseconds(1000);  // the port is down
  constexpr auto kDownBound = std::chrono::milliseconds(200);    // to see it go down
  auto start = clock::now();
  bool down = false;
  while (!c->remote_gone) {
    auto waited = clock::now() - start;
    if (!down && !(down = !port_up()) && waited >= kDownBound) return;  // the port stayed up
    if (waited >= kEventBound) break;
    pollfd p{ctx->async_fd, POLLIN, 0};
    ::poll(&p, 1, 20);
    take_async_events();
  }
  port_event_awaited_ = true;
  if (!c->remote_gone)
    RDMX_LOG(LogLevel::Warn, rank_,
             "verbs: device %s port %u is down, with no event for it in %lld ms",
             dev_.name().c_str(), unsigned(port), static_cast<long long>(kEventBound.count()));
}

void Fabric::on_async_event(const AsyncEvent& e) {
  std::string where = "device " + dev_.name();
  if (e.for_port()) where += " port " + std::to_string(e.port_num);
  if (e.for_qp()) {
    Conn* c = nullptr;
    for (auto& p : conns_)
      if (p->qp && p->qp->qp_num == e.qp_num) c = p.get();
    if (!c) return;  // another context's queue pair, or one already gone
    switch (e.type) {
      case IBV_EVENT_COMM_EST:
        if (c->id) rdma_notify(c->id.get(), IBV_EVENT_COMM_EST);
        return;
      case IBV_EVENT_QP_FATAL:
      case IBV_EVENT_QP_REQ_ERR:
      case IBV_EVENT_QP_ACCESS_ERR:
      case IBV_EVENT_PATH_MIG_ERR:
        fail(c, CmOutcome::ConnError, fabric::Failure::Other,
             where + ": " + e.what() + " on the connection with " + c->peer);
        return;
      default:
        RDMX_LOG(LogLevel::Debug, rank_, "verbs: %s: %s on the connection with %s", where.c_str(),
                 e.what(), c->peer.c_str());
        return;
    }
  }
  // Another context's shared receive queue (each has its own) is not this one's concern.
  if (e.for_srq() && e.srq && e.srq != dev_.srq()) return;
  switch (e.type) {
    case IBV_EVENT_SRQ_LIMIT_REACHED:
      RDMX_LOG(LogLevel::Debug, rank_, "verbs: %s: %s", where.c_str(), e.what());
      shared_low_ = true;
      return;
    case IBV_EVENT_PORT_ACTIVE:
      port_event_awaited_ = false;
      RDMX_LOG(LogLevel::Info, rank_, "verbs: %s: %s", where.c_str(), e.what());
      return;
    case IBV_EVENT_PORT_ERR:
      if (dev_.listener() && e.port_num != dev_.listener()->port_num) return;
      RDMX_LOG(LogLevel::Warn, rank_, "verbs: %s: %s", where.c_str(), e.what());
      // Like a vanished peer: the work in flight flushes with this cause, and the
      // engine hears of the end once the queue pair is drained.
      for (auto& p : conns_)
        peer_gone(p.get(), fabric::Failure::Disconnected,
                  where + ": " + e.what() + "; the connection with " + p->peer + " is lost");
      return;
    case IBV_EVENT_DEVICE_FATAL:
    case IBV_EVENT_CQ_ERR:
    case IBV_EVENT_SRQ_ERR:
      RDMX_LOG(LogLevel::Error, rank_, "verbs: %s: %s", where.c_str(), e.what());
      device_failed(where + ": " + e.what());
      return;
    default: RDMX_LOG(LogLevel::Info, rank_, "verbs: %s: %s", where.c_str(), e.what());
  }
}

}  // namespace rdmx::verbs
