// The engine suites over the native verbs/rdma_cm backend, with per-connection
// receives and with a shared receive queue (RDMX_SRQ=1) (runs where an RDMA device
// exists: the Soft-RoCE tier).
#include "engine/engine_test.h"

namespace rdmx::test {
INSTANTIATE_TEST_SUITE_P(Verbs, EngineTest, ::testing::Values("verbs", "verbs-srq"));
INSTANTIATE_TEST_SUITE_P(Verbs, StormTest, ::testing::Values("verbs"));
}  // namespace rdmx::test
