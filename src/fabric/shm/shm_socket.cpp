#include "fabric/shm/shm_socket.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

namespace rdmx::shm {
namespace {

socklen_t abstract_addr(const std::string& name, sockaddr_un& a) {
  std::memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  size_t n = std::min(name.size(), sizeof a.sun_path - 1);
  std::memcpy(a.sun_path + 1, name.data(), n);  // sun_path[0] = 0: the abstract namespace
  return socklen_t(offsetof(sockaddr_un, sun_path) + 1 + n);
}

}  // namespace

int listen_socket(std::string& name, std::string& err) {
  std::random_device rd;
  for (int attempt = 0; attempt < 8; ++attempt) {
    char buf[kMaxSocketName];
    std::snprintf(buf, sizeof buf, "rdmx-shm-%08x%08x", rd(), rd());
    int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      err = std::string("socket(AF_UNIX) failed: ") + std::strerror(errno);
      return -1;
    }
    sockaddr_un a;
    socklen_t len = abstract_addr(buf, a);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), len) == 0 &&
        ::listen(fd, kListenBacklog) == 0) {
      name = buf;
      return fd;
    }
    int e = errno;
    ::close(fd);
    if (e != EADDRINUSE) {
      err = std::string("binding the shared-memory listener failed: ") + std::strerror(e);
      return -1;
    }
  }
  err = "no free name for the shared-memory listener after 8 tries";
  return -1;
}

int connect_socket(const std::string& name, std::string& err) {
  int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    err = std::string("socket(AF_UNIX) failed: ") + std::strerror(errno);
    return -1;
  }
  sockaddr_un a;
  socklen_t len = abstract_addr(name, a);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), len) != 0) {
    err = "connecting to the local peer's socket failed: " + std::string(std::strerror(errno));
    if (errno == ECONNREFUSED) err += " (nobody listens there: the peer has exited)";
    if (errno == EAGAIN) err += " (its backlog is full)";
    ::close(fd);
    return -1;
  }
  return fd;
}

int accept_socket(int listener) {
  return ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

bool peer_credentials(int fd, pid_t& pid, uint32_t& uid) {
  ucred c{};
  socklen_t len = sizeof c;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c, &len) != 0) return false;
  pid = c.pid;
  uid = c.uid;
  return pid > 0;
}

bool send_frame(int fd, const void* p, size_t n, int pass_fd) {
  iovec iov{const_cast<void*>(p), n};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))];
  if (pass_fd >= 0) {
    std::memset(ctl, 0, sizeof ctl);
    m.msg_control = ctl;
    m.msg_controllen = sizeof ctl;
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
  }
  return ::sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT) == ssize_t(n);
}

ssize_t recv_frame(int fd, void* p, size_t cap, int* got_fd) {
  *got_fd = -1;
  iovec iov{p, cap};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  alignas(cmsghdr) char ctl[CMSG_SPACE(4 * sizeof(int))];
  m.msg_control = ctl;
  m.msg_controllen = sizeof ctl;
  ssize_t n = ::recvmsg(fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  if (n < 0) return -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int f;
      std::memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof f);
      if (*got_fd < 0)
        *got_fd = f;
      else
        ::close(f);
    }
  }
  if (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
    if (*got_fd >= 0) ::close(*got_fd);
    *got_fd = -1;
    errno = EMSGSIZE;
    return -1;
  }
  return n;
}

void send_wake(int fd) {
  char b = 1;
  (void)::send(fd, &b, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
}

}  // namespace rdmx::shm
