// The engine suites on the in-process loopback fabric, with per-connection receive
// buffers and credits, sending large eager payloads in place (as over libfabric tcp),
// carrying small messages without a receive buffer (as shared memory does), and with one
// shared receive queue (RDMX_SRQ=1).
#include "engine/engine_test.h"

namespace rdmx::test {
INSTANTIATE_TEST_SUITE_P(Loopback, EngineTest,
                         ::testing::Values("loopback", "loopback-in-place", "loopback-unbuffered",
                                           "loopback-srq"));
}
