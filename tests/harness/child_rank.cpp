#include "harness/child_rank.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "harness/world.h"

namespace rdmx::test {

rdmx_context_t* open_rank(const std::string& backend, int rank, int size, uint64_t job_key,
                          const SettingList& extra) {
  OwnedSettings s(backend_settings(backend) + extra);
  EXPECT_EQ(s.error(), "");
  std::string fabric = backend_fabric(backend);
  rdmx_init_params_t p{rank, size, fabric.c_str(), job_key, s.get()};
  rdmx_context_t* ctx = nullptr;
  EXPECT_EQ(rdmx_init(&p, &ctx), RDMX_OK) << rdmx_last_error(nullptr);
  return ctx;
}

bool send_address(int fd, rdmx_context_t* ctx) {
  auto mine = address_of(ctx);
  uint32_t len = uint32_t(mine.size());
  return ::write(fd, &len, 4) == 4 && ::write(fd, mine.data(), len) == ssize_t(len);
}

bool read_address(int fd, std::vector<uint8_t>& peer) {
  uint32_t len = 0;
  if (::read(fd, &len, 4) != 4 || len > 4096) return false;
  peer.resize(len);
  return ::read(fd, peer.data(), len) == ssize_t(len);
}

ChildRank fork_rank(const std::function<void(int to_parent, int from_parent)>& body) {
  int up[2], down[2];
  if (::pipe(up) != 0) return {};
  if (::pipe(down) != 0) {
    ::close(up[0]);
    ::close(up[1]);
    return {};
  }
  std::fflush(stdout);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(up[0]);
    ::close(down[1]);
    body(up[1], down[0]);
    _exit(0);
  }
  ::close(up[1]);
  ::close(down[0]);
  if (pid < 0) {
    ::close(up[0]);
    ::close(down[1]);
    return {};
  }
  return {pid, up[0], down[1]};
}

bool drive(std::initializer_list<rdmx_context_t*> ctxs, rdmx_request_t* req, rdmx_status_info_t* st,
           int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int done = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    for (auto* c : ctxs) rdmx_progress(c);
    rdmx_test(req, &done, st);
    if (done) return true;
  }
  return false;
}

}  // namespace rdmx::test
