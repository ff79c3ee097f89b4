// Ranks driven by hand, for the tests that need to control a peer process: fork one,
// exchange addresses over pipes, kill it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "harness/setting_list.h"
#include "rdmx/rdmx.h"

namespace rdmx::test {

// A context of `backend` (a name as in world.h) for rank of size, or null (the test has
// then failed).
rdmx_context_t* open_rank(const std::string& backend, int rank, int size, uint64_t job_key,
                          const SettingList& extra = {});

// One side of an address exchange over a pipe: length, then bytes.
bool send_address(int fd, rdmx_context_t* ctx);
bool read_address(int fd, std::vector<uint8_t>& peer);

// A rank in a child process, with a pipe each way for the address exchange: body runs
// in the child with its ends (to the parent, from the parent) and must not return. pid
// is negative if the pipes or the fork failed.
struct ChildRank {
  pid_t pid = -1;
  int from_child = -1;
  int to_child = -1;
};
ChildRank fork_rank(const std::function<void(int to_parent, int from_parent)>& body);

// Progresses every context until req completes or the time runs out.
bool drive(std::initializer_list<rdmx_context_t*> ctxs, rdmx_request_t* req, rdmx_status_info_t* st,
           int timeout_ms);

}  // namespace rdmx::test
