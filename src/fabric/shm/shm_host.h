// Which processes may talk through shared memory: those on the same host, as the kernel
// sees it, that can reach each other's sockets and files.
//
// The host identity is the kernel's boot id (the same host, whatever its name, and a
// different one after a reboot or in another VM) and the network namespace (the
// abstract Unix sockets the connections are made through are per network namespace;
// containers that share one can talk). The user id is part of it: shared memory and
// cross-memory reads are for the ranks of one user.
#pragma once

#include <cstdint>
#include <string>

namespace rdmx::shm {

struct HostIdentity {
  uint8_t boot_id[16];
  uint64_t netns_dev;
  uint64_t netns_ino;
  uint32_t uid;
  uint32_t reserved;

  bool operator==(const HostIdentity&) const = default;
};

// This process's identity (read once).
const HostIdentity& host_identity();

// Whether this process may read another of its user's processes' memory with
// process_vm_readv, as far as can be told before trying a peer: the system call works
// and Yama's ptrace_scope allows it between siblings. `why` says what was found.
bool cma_allowed(std::string& why);

}  // namespace rdmx::shm
