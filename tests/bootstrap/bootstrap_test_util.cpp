#include "bootstrap/bootstrap_test_util.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

namespace rdmx::bootstrap {

uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

Config config(int rank, int size, uint16_t port, uint64_t timeout_ms) {
  Config c;
  c.rank = rank;
  c.size = size;
  c.host = "127.0.0.1";
  c.port = port;
  c.timeout_ms = timeout_ms;
  return c;
}

Outcome run_rank(const Config& c) {
  Outcome o;
  Bootstrap b;
  o.rc = b.join(c, o.key, o.err);
  if (o.rc) return o;
  std::vector<uint8_t> mine(size_t(c.rank) + 1, uint8_t(c.rank));
  o.rc = b.exchange(mine, o.table, o.err);
  return o;
}

int raw_connect(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < 200; ++i) {
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // rank 0 may not listen yet
  }
  ::close(fd);
  return -1;
}

void send_join(int fd, int32_t rank, int32_t size, uint32_t magic,
               const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> b(20 + payload.size());
  uint16_t type = 1;
  uint32_t len = uint32_t(payload.size());
  std::memcpy(b.data(), &magic, 4);
  std::memcpy(b.data() + 4, &type, 2);
  std::memcpy(b.data() + 8, &rank, 4);
  std::memcpy(b.data() + 12, &size, 4);
  std::memcpy(b.data() + 16, &len, 4);
  if (!payload.empty()) std::memcpy(b.data() + 20, payload.data(), payload.size());
  ASSERT_EQ(::send(fd, b.data(), b.size(), MSG_NOSIGNAL), ssize_t(b.size()));
}

}  // namespace rdmx::bootstrap
