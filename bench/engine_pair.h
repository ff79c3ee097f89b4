// Two contexts in one thread: the engine measured without threads, locks contention or
// a network in the way. The fabric is loopback, or the one RDMX_BENCH_FABRIC names
// (shm: two shared-memory endpoints of this process).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "rdmx/rdmx.h"

namespace rdmx::bench {

class EnginePair {
 public:
  // setting: one RDMX_* name and its value, or none.
  explicit EnginePair(const char* setting = nullptr, int64_t value = 0) {
    rdmx_settings_t* s = nullptr;
    rdmx_settings_create(&s);
    if (setting && rdmx_settings_set_int(s, setting, value) != RDMX_OK) {
      std::fprintf(stderr, "%s\n", rdmx_last_error(nullptr));
      std::exit(1);
    }
    const char* fabric = std::getenv("RDMX_BENCH_FABRIC");
    for (int i = 0; i < 2; ++i) {
      rdmx_init_params_t p{i, 2, fabric && *fabric ? fabric : "loopback", 1, s};
      if (rdmx_init(&p, &c[i]) != RDMX_OK) {
        std::fprintf(stderr, "rdmx_init: %s\n", rdmx_last_error(nullptr));
        std::exit(1);
      }
    }
    for (int i = 0; i < 2; ++i) {
      size_t len = 256;
      uint8_t addr[256];
      rdmx_address(c[i], addr, &len);
      rdmx_add_peer(c[1 - i], i, addr, len);
    }
    rdmx_settings_free(s);
    uint64_t v = 0, w = 0;
    for (int i = 0; i < 4; ++i) pingpong(&v, &w, sizeof v, 0);  // connect and warm up
  }
  ~EnginePair() {
    rdmx_finalize(c[0]);
    rdmx_finalize(c[1]);
  }

  void wait(int side, rdmx_request_t* r) {
    int done = 0;
    rdmx_status_info_t st;
    for (;;) {
      rdmx_test(r, &done, &st);
      if (done) break;
      rdmx_progress(c[0]);
      rdmx_progress(c[1]);
    }
    if (st.error != RDMX_OK && st.error != RDMX_ERR_CANCELLED) {
      std::fprintf(stderr, "request failed: %s: %s\n", rdmx_strerror(st.error),
                   rdmx_last_error(c[side]));
      std::exit(1);
    }
    rdmx_request_free(c[side], r);
  }

  // One round trip: 0 sends tx to 1, which receives into rx and answers from rx.
  void pingpong(void* tx, void* rx, uint64_t len, int32_t tag) {
    rdmx_request_t *r1, *s0, *r0, *s1;
    rdmx_irecv(c[1], 0, 0, tag, rx, len, nullptr, nullptr, &r1);
    rdmx_isend(c[0], 1, 0, tag, tx, len, 0, nullptr, nullptr, &s0);
    wait(1, r1);
    wait(0, s0);
    rdmx_irecv(c[0], 1, 0, tag, tx, len, nullptr, nullptr, &r0);
    rdmx_isend(c[1], 0, 0, tag, rx, len, 0, nullptr, nullptr, &s1);
    wait(0, r0);
    wait(1, s1);
  }

  rdmx_context_t* c[2] = {};
};

}  // namespace rdmx::bench
