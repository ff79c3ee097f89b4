// The engine suites over libfabric: the tcp provider on the host (always), the verbs
// provider where an RDMA device exists (the Soft-RoCE tier).
#include "engine/engine_test.h"

namespace rdmx::test {
INSTANTIATE_TEST_SUITE_P(Ofi, EngineTest, ::testing::Values("ofi-tcp", "ofi-verbs", "ofi-tcp+shm"));
INSTANTIATE_TEST_SUITE_P(Ofi, ProcessTest, ::testing::Values("ofi-tcp"));
INSTANTIATE_TEST_SUITE_P(Ofi, StormTest, ::testing::Values("ofi-tcp"));
}  // namespace rdmx::test
