#include "bootstrap/bootstrap_socket.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace rdmx::bootstrap {
namespace {

constexpr uint32_t kFrameMagic = 0x53425852;  // "RXBS"
constexpr uint32_t kMaxPayload = 64u << 20;

struct FrameHeader {
  uint32_t magic;
  uint16_t type;
  uint16_t reserved;
  int32_t rank;
  int32_t size;
  uint32_t len;
};

static_assert(sizeof(FrameHeader) == kJoinBytes);

int ms_left(Deadline d) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(d - Clock::now()).count();
  return left <= 0 ? 0 : left > 1000000 ? 1000000 : int(left);
}

bool send_all(int fd, const void* p, size_t n, Deadline d, std::string& err) {
  auto* b = static_cast<const uint8_t*>(p);
  while (n) {
    ssize_t k = ::send(fd, b, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k > 0) {
      b += k;
      n -= size_t(k);
      continue;
    }
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd pf{fd, POLLOUT, 0};
      if (::poll(&pf, 1, ms_left(d)) == 0 && Clock::now() >= d) {
        err = "timed out sending";
        return false;
      }
      continue;
    }
    err = std::string("send: ") + std::strerror(errno);
    return false;
  }
  return true;
}

bool recv_all(int fd, void* p, size_t n, Deadline d, std::string& err) {
  auto* b = static_cast<uint8_t*>(p);
  while (n) {
    if (!wait_readable(fd, d)) {
      err = "timed out waiting";
      return false;
    }
    ssize_t k = ::recv(fd, b, n, MSG_DONTWAIT);
    if (k > 0) {
      b += k;
      n -= size_t(k);
      continue;
    }
    if (k == 0) {
      err = "the other side closed the connection";
      return false;
    }
    if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
    err = std::string("recv: ") + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace

void Socket::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool parse_host_port(const std::string& text, std::string& host, uint16_t& port, std::string& err) {
  size_t colon;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      err = "'" + text + "' is not [address]:port";
      return false;
    }
    host = text.substr(1, close - 1);
    colon = close + 1;
  } else {
    colon = text.rfind(':');
    if (colon == std::string::npos) {
      err = "'" + text + "' has no :port";
      return false;
    }
    host = text.substr(0, colon);
  }
  std::string p = text.substr(colon + 1);
  char* end = nullptr;
  errno = 0;
  long v = p.empty() ? 0 : std::strtol(p.c_str(), &end, 10);
  if (host.empty() || p.empty() || errno || *end != '\0' || v < 1 || v > 65535) {
    err = "'" + text + "' is not host:port with a port from 1 to 65535";
    return false;
  }
  port = uint16_t(v);
  return true;
}

bool listen_on(uint16_t port, Socket& out, std::string& err) {
  int one = 1, zero = 0;
  // Dual-stack first, so that both IPv4 and IPv6 peers reach it; IPv4 alone otherwise.
  Socket s(::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (s) {
    ::setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    ::setsockopt(s.fd(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(port);
    if (::bind(s.fd(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) s.reset();
  }
  if (!s) {
    s = Socket(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!s) {
      err = std::string("socket: ") + std::strerror(errno);
      return false;
    }
    ::setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(port);
    if (::bind(s.fd(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      err = "cannot listen on port " + std::to_string(port) + ": " + std::strerror(errno);
      return false;
    }
  }
  if (::listen(s.fd(), 1024) != 0) {
    err = std::string("listen: ") + std::strerror(errno);
    return false;
  }
  out = std::move(s);
  return true;
}

bool connect_to(const std::string& host, uint16_t port, Deadline d, Socket& out, std::string& err) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &list);
  if (rc != 0) {
    err = "cannot resolve '" + host + "': " + ::gai_strerror(rc);
    return false;
  }
  std::string last = "nobody listens there";
  for (;;) {
    for (addrinfo* a = list; a; a = a->ai_next) {
      Socket s(
          ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol));
      if (!s) continue;
      int r = ::connect(s.fd(), a->ai_addr, a->ai_addrlen);
      if (r != 0 && errno == EINPROGRESS) {
        pollfd pf{s.fd(), POLLOUT, 0};
        int left = std::min(ms_left(d), 1000);
        if (::poll(&pf, 1, left) == 1) {
          int e = 0;
          socklen_t el = sizeof e;
          ::getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &e, &el);
          r = e ? -1 : 0;
          errno = e;
        } else {
          errno = ETIMEDOUT;
        }
      }
      if (r == 0) {
        int one = 1;
        ::setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        ::freeaddrinfo(list);
        out = std::move(s);
        return true;
      }
      last = std::strerror(errno);
    }
    if (Clock::now() >= d) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // rank 0 may start later
  }
  ::freeaddrinfo(list);
  err = "could not connect to " + host + ":" + std::to_string(port) + " (" + last + ")";
  return false;
}

bool wait_readable(int fd, Deadline d) {
  for (;;) {
    pollfd pf{fd, POLLIN, 0};
    int r = ::poll(&pf, 1, ms_left(d));
    if (r > 0) return true;
    if (r < 0 && errno == EINTR) continue;
    if (Clock::now() >= d) return false;
  }
}

bool send_frame(int fd, FrameType t, int32_t rank, int32_t size, const void* data, size_t len,
                Deadline d, std::string& err) {
  FrameHeader h{kFrameMagic, uint16_t(t), 0, rank, size, uint32_t(len)};
  return send_all(fd, &h, sizeof h, d, err) && (len == 0 || send_all(fd, data, len, d, err));
}

bool recv_frame(int fd, Frame& out, Deadline d, std::string& err) {
  FrameHeader h{};
  if (!recv_all(fd, &h, sizeof h, d, err)) return false;
  if (h.magic != kFrameMagic || h.len > kMaxPayload || h.type < 1 || h.type > 6) {
    err = "a message that is not from an rdmx bootstrap";
    return false;
  }
  out.type = FrameType(h.type);
  out.rank = h.rank;
  out.size = h.size;
  out.payload.resize(h.len);
  return h.len == 0 || recv_all(fd, out.payload.data(), h.len, d, err);
}

}  // namespace rdmx::bootstrap

namespace rdmx::bootstrap {

bool decode_join(const uint8_t* header, size_t payload_len, int32_t& rank, int32_t& size,
                 std::string& why) {
  static_assert(sizeof(FrameHeader) == kJoinBytes);
  FrameHeader h{};
  std::memcpy(&h, header, sizeof h);
  if (h.magic != kFrameMagic) {
    why = "not an rdmx bootstrap message";
    return false;
  }
  if (h.type != uint16_t(FrameType::Join) || h.len != payload_len) {
    why = "not a join (message type " + std::to_string(h.type) + ", " + std::to_string(h.len) +
          " bytes)";
    if (h.type == uint16_t(FrameType::Join))
      why += payload_len ? ": no proof of the job secret (is RDMX_JOB_SECRET set on every rank?)"
                         : ": a proof of a job secret rank 0 does not have";
    return false;
  }
  rank = h.rank;
  size = h.size;
  return true;
}

std::vector<uint8_t> encode_table(const std::vector<std::vector<uint8_t>>& all) {
  std::vector<uint8_t> table;
  for (auto& a : all) {
    uint32_t len = uint32_t(a.size());
    table.insert(table.end(), reinterpret_cast<uint8_t*>(&len),
                 reinterpret_cast<uint8_t*>(&len) + 4);
    table.insert(table.end(), a.begin(), a.end());
  }
  return table;
}

bool decode_table(const std::vector<uint8_t>& payload, int32_t size,
                  std::vector<std::vector<uint8_t>>& all) {
  if (size < 0) return false;
  const uint8_t* p = payload.data();
  const uint8_t* end = p + payload.size();
  all.assign(size_t(size), {});
  for (int32_t r = 0; r < size; ++r) {
    uint32_t len = 0;
    if (end - p < 4 || (std::memcpy(&len, p, 4), end - p - 4 < len)) return false;
    all[size_t(r)].assign(p + 4, p + 4 + len);
    p += 4 + len;
  }
  return true;
}

}  // namespace rdmx::bootstrap
