#include "fabric/shm/shm_host.h"

#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace rdmx::shm {
namespace {

void read_boot_id(uint8_t out[16]) {
  std::memset(out, 0, 16);
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::string s;
  if (!(f >> s)) return;
  int n = 0;
  for (size_t i = 0; i + 1 < s.size() && n < 16; ++i) {
    if (s[i] == '-') continue;
    unsigned v = 0;
    if (std::sscanf(s.c_str() + i, "%2x", &v) != 1) return;
    out[n++] = uint8_t(v);
    ++i;
  }
}

HostIdentity compute() {
  HostIdentity h{};
  read_boot_id(h.boot_id);
  struct stat st {};
  if (::stat("/proc/self/ns/net", &st) == 0) {
    h.netns_dev = uint64_t(st.st_dev);
    h.netns_ino = uint64_t(st.st_ino);
  }
  h.uid = uint32_t(::getuid());
  return h;
}

}  // namespace

const HostIdentity& host_identity() {
  static const HostIdentity h = compute();
  return h;
}

bool cma_allowed(std::string& why) {
  uint64_t src = 0x1234, dst = 0;
  iovec l{&dst, sizeof dst}, r{&src, sizeof src};
  if (::process_vm_readv(::getpid(), &l, 1, &r, 1, 0) != ssize_t(sizeof dst) || dst != src) {
    why = std::string("process_vm_readv is not permitted here (") + std::strerror(errno) +
          "; a seccomp filter or container policy)";
    return false;
  }
  std::ifstream f("/proc/sys/kernel/yama/ptrace_scope");
  int scope = 0;
  if (f >> scope && scope > 0) {
    why = "Yama ptrace_scope is " + std::to_string(scope) +
          ": ranks may not read each other's memory";
    return false;
  }
  why = "process_vm_readv works and ptrace_scope allows it";
  return true;
}

}  // namespace rdmx::shm
