// The sockets connections are made through: Unix sequenced-packet sockets in the
// abstract namespace (no file to clean up; gone with the process), each message one
// frame, a segment's descriptor passed alongside. The socket of an established
// connection stays open: it carries wake-ups to a sleeping peer, and its end (EOF) is
// how a peer's exit, clean or not, is seen.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace rdmx::shm {

// The longest abstract name this fabric makes (sun_path holds 107 after the NUL).
constexpr size_t kMaxSocketName = 40;

// Connection requests that may wait to be accepted, and to be answered: every other rank
// of a job on one host may connect at once (an alltoall's first round). The kernel caps
// the backlog at net.core.somaxconn (4096 on Debian 12); with the 128 this had, 255 ranks
// connecting at once to one found it full.
inline constexpr int kListenBacklog = 4096;

// Binds a listening socket under a fresh random name (returned in name); -1 and err on
// failure.
int listen_socket(std::string& name, std::string& err);
// Connects to a listening socket by name (non-blocking); -1 and err on failure.
int connect_socket(const std::string& name, std::string& err);
// Accepts one pending connection, or -1 (EAGAIN included).
int accept_socket(int listener);

// The connected peer's process and user, as the kernel reports them (translated into
// this process's namespaces).
bool peer_credentials(int fd, pid_t& pid, uint32_t& uid);

// Sends one frame, with a descriptor if pass_fd >= 0. Returns false if the frame did not
// go whole.
bool send_frame(int fd, const void* p, size_t n, int pass_fd = -1);
// Receives one frame into p (at most cap bytes). Returns its length, 0 at EOF, -1 if
// nothing is there (EAGAIN) or on error (errno says which). A passed descriptor goes to
// *got_fd (-1 if none); descriptors beyond one are closed.
ssize_t recv_frame(int fd, void* p, size_t cap, int* got_fd);

// Wakes a peer: a one-byte frame, dropped if the socket is full (the peer is then
// awake anyway).
void send_wake(int fd);

}  // namespace rdmx::shm
