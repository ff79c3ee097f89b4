// Multi-process worlds: each rank is a child process with its own context, so the
// fabric is crossed for real. The parent relays the address exchange and the barriers
// over pipes, and reaps the children with a time limit.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "harness/process_world.h"

#include "harness/leak_check.h"

namespace rdmx::test {
namespace {

bool write_all(int fd, const void* p, size_t n) {
  auto* b = static_cast<const uint8_t*>(p);
  while (n) {
    ssize_t k = ::write(fd, b, n);
    if (k <= 0) return false;
    b += k;
    n -= size_t(k);
  }
  return true;
}

bool read_all(int fd, void* p, size_t n) {
  auto* b = static_cast<uint8_t*>(p);
  while (n) {
    ssize_t k = ::read(fd, b, n);
    if (k <= 0) return false;
    b += k;
    n -= size_t(k);
  }
  return true;
}

// Child side: waits for one byte from the parent while progressing the context.
bool wait_release(int fd, rdmx_context_t* ctx) {
  pollfd p{fd, POLLIN, 0};
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  while (::poll(&p, 1, 0) == 0) {
    if (ctx) rdmx_progress(ctx);
    if (std::chrono::steady_clock::now() > deadline) return false;
  }
  char c;
  return read_all(fd, &c, 1);
}

[[noreturn]] void child(int rank, int n, const std::string& fabric, const SettingList& settings,
                        int to_parent, int from_parent, const std::function<void(Rank&)>& body) {
  Rank me;
  me.rank = rank;
  me.size = n;
  OwnedSettings owned(settings);
  rdmx_init_params_t p{rank, n, fabric.c_str(), 0x5eed, owned.get()};
  int rc = owned.error().empty() ? rdmx_init(&p, &me.ctx) : RDMX_ERR_INVALID;
  std::vector<uint8_t> addr;
  if (rc == RDMX_OK) {
    addr = address_of(me.ctx);
  } else {
    ADD_FAILURE() << "rank " << rank << ": rdmx_init: " << rdmx_last_error(nullptr);
  }
  uint32_t len = uint32_t(addr.size());
  write_all(to_parent, &len, 4);
  write_all(to_parent, addr.data(), len);
  for (int q = 0; q < n; ++q) {
    uint32_t l = 0;
    if (!read_all(from_parent, &l, 4)) _exit(3);
    std::vector<uint8_t> a(l);
    if (!read_all(from_parent, a.data(), l)) _exit(3);
    if (me.ctx && l) rdmx_add_peer(me.ctx, q, a.data(), a.size());
  }
  me.barrier_fn = [&] {
    char b = 'B';
    write_all(to_parent, &b, 1);
    if (!wait_release(from_parent, me.ctx)) ADD_FAILURE() << "barrier timed out";
  };
  if (me.ctx) body(me);
  me.barrier_fn();  // nobody finalizes while another rank may still need it
  if (me.ctx) rdmx_finalize(me.ctx);
  // The exit below skips LeakSanitizer's own check at exit: check here, once the
  // context is gone.
  if (leaks_found()) ADD_FAILURE() << "rank " << rank << " leaked memory (report above)";
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(::testing::Test::HasFailure() ? 1 : 0);
}

}  // namespace

void run_processes(int n, const std::string& fabric,
                   const std::function<SettingList(int)>& settings,
                   const std::function<void(Rank&)>& body, int timeout_s) {
  std::vector<pid_t> pids;
  std::vector<int> up(static_cast<size_t>(n)), down(static_cast<size_t>(n));
  std::fflush(stdout);
  for (int r = 0; r < n; ++r) {
    int a[2], b[2];
    ASSERT_EQ(::pipe(a), 0);
    ASSERT_EQ(::pipe(b), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(a[0]);
      ::close(b[1]);
      for (int q = 0; q < r; ++q) {
        ::close(up[size_t(q)]);
        ::close(down[size_t(q)]);
      }
      child(r, n, fabric, settings(r), a[1], b[0], body);
    }
    ::close(a[1]);
    ::close(b[0]);
    up[size_t(r)] = a[0];
    down[size_t(r)] = b[1];
    pids.push_back(pid);
  }
  // Address exchange.
  std::vector<std::vector<uint8_t>> addrs(static_cast<size_t>(n));
  bool ok = true;
  for (int r = 0; r < n && ok; ++r) {
    uint32_t l = 0;
    ok = read_all(up[size_t(r)], &l, 4);
    addrs[size_t(r)].resize(l);
    ok = ok && read_all(up[size_t(r)], addrs[size_t(r)].data(), l);
  }
  for (int r = 0; r < n && ok; ++r)
    for (int q = 0; q < n; ++q) {
      uint32_t l = uint32_t(addrs[size_t(q)].size());
      write_all(down[size_t(r)], &l, 4);
      write_all(down[size_t(r)], addrs[size_t(q)].data(), l);
    }
  // Barriers until every child has closed its pipe.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int open = ok ? n : 0, waiting = 0;
  std::vector<bool> closed(static_cast<size_t>(n), false);
  while (open > 0 && std::chrono::steady_clock::now() < deadline) {
    std::vector<pollfd> fds;
    for (int r = 0; r < n; ++r)
      if (!closed[size_t(r)]) fds.push_back({up[size_t(r)], POLLIN, 0});
    if (::poll(fds.data(), fds.size(), 200) <= 0) continue;
    for (auto& f : fds) {
      if (!(f.revents & (POLLIN | POLLHUP))) continue;
      int r = 0;
      while (up[size_t(r)] != f.fd) ++r;
      char c;
      if (::read(f.fd, &c, 1) != 1) {
        closed[size_t(r)] = true;
        --open;
        continue;
      }
      if (++waiting == n) {
        waiting = 0;
        for (int q = 0; q < n; ++q) write_all(down[size_t(q)], "G", 1);
      }
    }
  }
  bool timed_out = open > 0;
  for (int r = 0; r < n; ++r) {
    if (timed_out) ::kill(pids[size_t(r)], SIGKILL);
    int st = 0;
    ::waitpid(pids[size_t(r)], &st, 0);
    ::close(up[size_t(r)]);
    ::close(down[size_t(r)]);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
        << "rank " << r
        << (timed_out ? " was killed after the time limit" : " failed (its output is above)")
        << ", status " << st;
  }
}

}  // namespace rdmx::test
