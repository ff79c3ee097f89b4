// The reports of an inner fabric passed on unchanged to the sink above it: the base of
// the relays of fabrics made of fabrics (composite/, rails/), which wrap only their
// inner fabrics' connection requests.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fabric/fabric.h"

namespace rdmx::fabric {

template <class Sink>
struct Relay {
  Sink& sink;
  void on_established(void* u, const ConnAttrs& a, const uint8_t* p, size_t n) {
    sink.on_established(u, a, p, n);
  }
  void on_rejected(void* u, const uint8_t* p, size_t n, const char* why) {
    sink.on_rejected(u, p, n, why);
  }
  void on_conn_error(void* u, Failure f, const char* why) { sink.on_conn_error(u, f, why); }
  [[gnu::always_inline]] void on_recv(void* u, uint64_t wr, uint32_t len) {
    sink.on_recv(u, wr, len);
  }
  [[gnu::always_inline]] void on_recv_unbuffered(void* u, const uint8_t* m, uint32_t len) {
    sink.on_recv_unbuffered(u, m, len);
  }
  void on_send_done(void* u, uint64_t wr) { sink.on_send_done(u, wr); }
  void on_send_room(void* u) { sink.on_send_room(u); }
  void on_read_done(void* u, uint64_t wr) { sink.on_read_done(u, wr); }
  void on_wr_error(void* u, uint64_t wr, Failure f, const char* why) {
    sink.on_wr_error(u, wr, f, why);
  }
  void on_shared_receive_low() {
    if constexpr (requires { sink.on_shared_receive_low(); }) sink.on_shared_receive_low();
  }
};

}  // namespace rdmx::fabric
