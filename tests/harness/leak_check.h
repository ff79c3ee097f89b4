// Leak checks at the points where a rank's memory should all be gone: after
// rdmx_finalize, in each rank's process, and after a world of thread ranks has ended.
// Without LeakSanitizer (or with detect_leaks=0) they find nothing.
#pragma once

namespace rdmx::test {

// True if LeakSanitizer finds memory that nothing points to any more; its report (with
// the allocation stacks) goes to stderr. Each call reports every leak found so far, so
// after one leak every later check in the same process fails too: look at the first.
bool leaks_found();

}  // namespace rdmx::test
