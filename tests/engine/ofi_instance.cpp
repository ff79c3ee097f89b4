// The engine suites over libfabric: the tcp provider on the host (always), the verbs
// provider where an RDMA device exists (the Soft-RoCE tier), each also with a shared
// receive context (RDMX_SRQ=1).
#include "engine/engine_test.h"

namespace rdmx::test {
// (The order keeps each name's index: the Soft-RoCE tier picks ofi-verbs and
// ofi-verbs-srq by theirs, /1 and /4.)
INSTANTIATE_TEST_SUITE_P(Ofi, EngineTest,
                         ::testing::Values("ofi-tcp", "ofi-verbs", "ofi-tcp+shm", "ofi-tcp-srq",
                                           "ofi-verbs-srq", "ofi-tcp+shm-srq"));
INSTANTIATE_TEST_SUITE_P(Ofi, ProcessTest, ::testing::Values("ofi-tcp"));
INSTANTIATE_TEST_SUITE_P(Ofi, StormTest, ::testing::Values("ofi-tcp"));
}  // namespace rdmx::test
