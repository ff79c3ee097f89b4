// A fixed workload for valgrind --tool=callgrind: N 8-byte send+receive pairs between
// two loopback contexts. bench/count-instructions divides the counts by N.
//   engine_instructions N                 every message has the same tag
//   engine_instructions N rotate          the tag changes every round trip (64 in turn)
//   engine_instructions N MODE PENDING    PENDING receives with other tags wait in the
//                                         posted queue throughout
//   engine_instructions N MODE PENDING BYTES   messages of BYTES (0 to 256) instead of 8
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench/engine_pair.h"

int main(int argc, char** argv) {
  long n = argc > 1 ? std::atol(argv[1]) : 10000;
  bool rotate = argc > 2 && std::strcmp(argv[2], "rotate") == 0;
  long pending = argc > 3 ? std::atol(argv[3]) : 0;
  long bytes = argc > 4 ? std::atol(argv[4]) : 8;
  if (bytes < 0 || bytes > 256) {
    std::fprintf(stderr, "engine_instructions: BYTES is %ld; accepted: 0 to 256\n", bytes);
    return 2;
  }
  rdmx::bench::EnginePair p;
  std::vector<uint64_t> sink(size_t(pending > 0 ? pending : 0));
  for (long i = 0; i < pending; ++i) {
    rdmx_request_t* r;
    rdmx_irecv(p.c[1], 0, 0, int32_t(1000 + i), &sink[size_t(i)], 8, nullptr, nullptr, &r);
  }
  uint64_t v[32] = {}, w[32] = {};
  // Each round trip is two send+receive pairs.
  for (long i = 0; i < n / 2; ++i) p.pingpong(v, w, uint64_t(bytes), rotate ? int32_t(i % 64) : 1);
  return 0;
}
