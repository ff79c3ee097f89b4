#include "harness/leak_check.h"

#if defined(__SANITIZE_ADDRESS__)
#define RDMX_TEST_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define RDMX_TEST_LSAN 1
#endif
#endif

#if RDMX_TEST_LSAN
#include <sanitizer/lsan_interface.h>
#endif

namespace rdmx::test {

bool leaks_found() {
#if RDMX_TEST_LSAN
  return __lsan_do_recoverable_leak_check() != 0;
#else
  return false;
#endif
}

}  // namespace rdmx::test
