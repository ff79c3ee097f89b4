// The engine suites on the in-process loopback fabric.
#include "engine/engine_test.h"

namespace rdmx::test {
INSTANTIATE_TEST_SUITE_P(Loopback, EngineTest, ::testing::Values("loopback"));
}
