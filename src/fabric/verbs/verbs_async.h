// The device's asynchronous events (ibv_get_async_event): a queue pair gone fatal, a
// port gone down or up, the device itself failing. librdmacm opens each device once per
// process, so every context on a device shares one event stream: whichever context
// polls reads it for all of them, and each event, copied and acknowledged, waits in the
// inbox of every context on that device until that context's own progress takes it
// (a queue pair event matters only to the context that owns the queue pair).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>
#include <vector>

namespace rdmx::verbs {

// One event, copied out before it was acknowledged.
struct AsyncEvent {
  ibv_event_type type;
  uint32_t qp_num = 0;           // queue pair events
  uint32_t port_num = 0;         // port events
  const ibv_srq* srq = nullptr;  // shared receive queue events
  bool for_qp() const;
  bool for_port() const;
  bool for_srq() const;
  // "port error", "queue pair fatal error", ...
  const char* what() const;
};

class Fabric;

namespace async_events {

// fabric starts or stops receiving ctx's events (open and destruction; the first makes
// ctx's event descriptor non-blocking).
void subscribe(ibv_context* ctx, Fabric* fabric);
void unsubscribe(ibv_context* ctx, Fabric* fabric);
// Reads every event ctx has now into the inboxes (another thread reading at the same
// time is left to it; read_device false: no read, when the descriptor was seen empty),
// then moves fabric's inbox into out (emptied first).
void poll(ibv_context* ctx, Fabric* fabric, std::vector<AsyncEvent>& out, bool read_device = true);
// Delivers e to every context on ctx as if the device had reported it: the events no
// driver raises on demand (a queue pair or the device gone fatal), for tests.
void inject(ibv_context* ctx, const AsyncEvent& e);

}  // namespace async_events
}  // namespace rdmx::verbs
