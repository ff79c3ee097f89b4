// A fixed workload for valgrind --tool=callgrind: N 8-byte send+receive pairs between
// two loopback contexts. bench/count-instructions divides the counts by N.
//   engine_instructions N          every message has the same tag
//   engine_instructions N rotate   the tag changes every round trip (64 tags in turn)
#include <cstdlib>
#include <cstring>

#include "bench/engine_pair.h"

int main(int argc, char** argv) {
  long n = argc > 1 ? std::atol(argv[1]) : 10000;
  bool rotate = argc > 2 && std::strcmp(argv[2], "rotate") == 0;
  rdmx::bench::EnginePair p;
  uint64_t v = 0, w = 0;
  // Each round trip is two send+receive pairs.
  for (long i = 0; i < n / 2; ++i) p.pingpong(&v, &w, sizeof v, rotate ? int32_t(i % 64) : 1);
  return 0;
}
