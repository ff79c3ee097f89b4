// Reading the device's asynchronous events for every context on it (verbs_async.h).
#include "fabric/verbs/verbs_async.h"

#include <fcntl.h>

#include <cerrno>
#include <mutex>

#include "core/log.h"

namespace rdmx::verbs {

bool AsyncEvent::for_qp() const {
  switch (type) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED: return true;
    default: return false;
  }
}

bool AsyncEvent::for_port() const {
  switch (type) {
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_LID_CHANGE:
    case IBV_EVENT_PKEY_CHANGE:
    case IBV_EVENT_GID_CHANGE:
    case IBV_EVENT_SM_CHANGE:
    case IBV_EVENT_CLIENT_REREGISTER: return true;
    default: return false;
  }
}

bool AsyncEvent::for_srq() const {
  return type == IBV_EVENT_SRQ_LIMIT_REACHED || type == IBV_EVENT_SRQ_ERR;
}

const char* AsyncEvent::what() const {
  switch (type) {
    case IBV_EVENT_QP_FATAL: return "queue pair fatal error (IBV_EVENT_QP_FATAL)";
    case IBV_EVENT_QP_REQ_ERR: return "invalid request on the queue pair (IBV_EVENT_QP_REQ_ERR)";
    case IBV_EVENT_QP_ACCESS_ERR: return "access error on the queue pair (IBV_EVENT_QP_ACCESS_ERR)";
    case IBV_EVENT_COMM_EST: return "communication established (IBV_EVENT_COMM_EST)";
    case IBV_EVENT_PATH_MIG_ERR: return "path migration failed (IBV_EVENT_PATH_MIG_ERR)";
    case IBV_EVENT_PORT_ERR: return "port error: the link is down (IBV_EVENT_PORT_ERR)";
    case IBV_EVENT_PORT_ACTIVE: return "port active (IBV_EVENT_PORT_ACTIVE)";
    case IBV_EVENT_DEVICE_FATAL: return "device fatal error (IBV_EVENT_DEVICE_FATAL)";
    case IBV_EVENT_CQ_ERR: return "completion queue error (IBV_EVENT_CQ_ERR)";
    case IBV_EVENT_SRQ_ERR: return "shared receive queue error (IBV_EVENT_SRQ_ERR)";
    default: return ibv_event_type_str(type);
  }
}

namespace async_events {
namespace {

struct Subscriber {
  ibv_context* ctx;
  Fabric* fabric;
  bool readable;  // ctx's event descriptor is non-blocking: reading never waits
  std::vector<AsyncEvent> inbox;
};

std::mutex mu;
std::vector<Subscriber> subscribers;  // few: one per context of this process

void read_all(ibv_context* ctx) {
  ibv_async_event ev;
  while (ibv_get_async_event(ctx, &ev) == 0) {
    AsyncEvent e{ev.event_type};
    if (e.for_qp() && ev.element.qp) e.qp_num = ev.element.qp->qp_num;
    if (e.for_port()) e.port_num = uint32_t(ev.element.port_num);
    if (e.for_srq()) e.srq = ev.element.srq;
    ibv_ack_async_event(&ev);
    for (Subscriber& s : subscribers)
      if (s.ctx == ctx) s.inbox.push_back(e);
  }
}

}  // namespace

void subscribe(ibv_context* ctx, Fabric* fabric) {
  std::lock_guard<std::mutex> g(mu);
  int flags = fcntl(ctx->async_fd, F_GETFL);
  bool readable = flags >= 0 &&
                  ((flags & O_NONBLOCK) || fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK) == 0);
  if (!readable)
    RDMX_LOG(LogLevel::Warn, -1,
             "verbs: the device's event descriptor cannot be made non-blocking (errno %d): "
             "its port and queue pair events are not read",
             errno);
  subscribers.push_back({ctx, fabric, readable, {}});
}

void unsubscribe(ibv_context* ctx, Fabric* fabric) {
  std::lock_guard<std::mutex> g(mu);
  std::erase_if(subscribers,
                [&](const Subscriber& s) { return s.ctx == ctx && s.fabric == fabric; });
}

void inject(ibv_context* ctx, const AsyncEvent& e) {
  std::lock_guard<std::mutex> g(mu);
  for (Subscriber& s : subscribers)
    if (s.ctx == ctx) s.inbox.push_back(e);
}

void poll(ibv_context* ctx, Fabric* fabric, std::vector<AsyncEvent>& out, bool read_device) {
  out.clear();
  std::unique_lock<std::mutex> g(mu, std::try_to_lock);
  if (!g.owns_lock()) return;
  for (Subscriber& s : subscribers)
    if (s.fabric == fabric) {
      if (s.readable && read_device) read_all(ctx);
      out.swap(s.inbox);
    }
}

}  // namespace async_events
}  // namespace rdmx::verbs
