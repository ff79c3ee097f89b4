// The engine suites over shared memory, each rank a process: READs across memory
// (process_vm_readv), and by copies through the segments (what ranks get where the
// kernel forbids cross-memory reads).
#include "engine/engine_test.h"

namespace rdmx::test {
INSTANTIATE_TEST_SUITE_P(Shm, EngineTest, ::testing::Values("shm", "shm-copy"));
INSTANTIATE_TEST_SUITE_P(Shm, ProcessTest, ::testing::Values("shm", "shm-copy"));
INSTANTIATE_TEST_SUITE_P(Shm, StormTest, ::testing::Values("shm"));
}  // namespace rdmx::test
