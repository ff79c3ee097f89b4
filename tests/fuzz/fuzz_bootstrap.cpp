// The standalone bootstrap (src/bootstrap/): what a stranger can send to rank 0's
// listener, the frames a rank reads from rank 0 and the address table in them, and the
// RDMX_BOOTSTRAP host:port text. The sockets are Unix sockets of this process: the
// code under test reads them as it reads TCP.
//
// Input: one byte choosing the part, then
//   0 (lobby): a byte for the job size (2 to 4; with bit 7, the job has a secret), then
//     what the stranger sends before it closes; the job's real ranks join after it, and
//     rank 0 must admit them all;
//   1 (frames): a byte for the table's rank count (1 to 8), then the byte stream rank 0
//     would send, read frame by frame until it ends;
//   2 (host:port): two bytes for RDMX_RANK and RDMX_SIZE, then the text.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>

#include "bootstrap/bootstrap.h"
#include "bootstrap/bootstrap_lobby.h"
#include "bootstrap/bootstrap_proof.h"
#include "bootstrap/bootstrap_socket.h"
#include "fuzz/fuzz_input.h"
#include "rdmx/rdmx.h"

namespace rdmx::bootstrap {
namespace {

constexpr auto kPatience = std::chrono::seconds(5);

// A listening Unix socket under a name of this process's own.
Socket listen_here(sockaddr_un& a, socklen_t& len) {
  static unsigned serial = 0;
  std::memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  int n = std::snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "rdmx-fuzz-lobby-%d-%u",
                        int(::getpid()), serial++);
  len = socklen_t(offsetof(sockaddr_un, sun_path) + 1 + size_t(n));
  Socket s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  FUZZ_CHECK(s && ::bind(s.fd(), reinterpret_cast<sockaddr*>(&a), len) == 0);
  FUZZ_CHECK(::listen(s.fd(), 64) == 0);
  return s;
}

Socket connect_here(const sockaddr_un& a, socklen_t len) {
  Socket s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  FUZZ_CHECK(s && ::connect(s.fd(), reinterpret_cast<const sockaddr*>(&a), len) == 0);
  return s;
}

// Sends what fits without blocking: nobody reads until everything is written.
void send_some(int fd, const std::vector<uint8_t>& b) {
  if (!b.empty()) (void)::send(fd, b.data(), b.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

// The job's real ranks, each as Bootstrap::exchange joins: with a secret, it reads rank
// 0's challenge and answers with its proof.
void join_all(const sockaddr_un& a, socklen_t len, int32_t size, const SipKey* key,
              std::vector<Socket>& joiners) {
  auto deadline = Clock::now() + kPatience;
  std::string err;
  for (int32_t r = 1; r < size; ++r) {
    joiners.push_back(connect_here(a, len));
    int fd = joiners.back().fd();
    uint8_t proof[kProofBytes] = {};
    if (key) {
      Frame c;
      FUZZ_CHECK(recv_frame(fd, c, deadline, err));
      FUZZ_CHECK(c.type == FrameType::Challenge && c.payload.size() == kChallengeBytes);
      prove_join(*key, c.payload.data(), r, size, proof);
    }
    FUZZ_CHECK(
        send_frame(fd, FrameType::Join, r, size, proof, key ? kProofBytes : 0, deadline, err));
  }
}

void lobby(fuzz::Input& in) {
  uint8_t shape = in.u8();
  int32_t size = 2 + shape % 3;
  SipKey secret{0x0123456789abcdefull, 0xfedcba9876543210ull};
  const SipKey* key = (shape & 0x80) ? &secret : nullptr;
  sockaddr_un a;
  socklen_t len;
  Socket listener = listen_here(a, len);
  Socket stranger = connect_here(a, len);
  send_some(stranger.fd(), in.rest());
  ::shutdown(stranger.fd(), SHUT_WR);
  // Whatever the stranger said, the job's ranks get in, and at once. With a secret they
  // wait for rank 0's challenge, so they join from a thread of their own.
  std::vector<Socket> joiners;
  std::thread ranks_join([&] { join_all(a, len, size, key, joiners); });
  std::vector<Socket> ranks(static_cast<size_t>(size));
  Lobby l(size, listener, key);
  bool all_in = l.fill(ranks, Clock::now() + kPatience);
  ranks_join.join();
  FUZZ_CHECK(all_in);
  for (int32_t r = 1; r < size; ++r) FUZZ_CHECK(ranks[size_t(r)]);
}

void frames(fuzz::Input& in) {
  int32_t table_size = 1 + in.u8() % 8;
  std::vector<uint8_t> stream = in.rest();
  int sv[2];
  FUZZ_CHECK(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  Socket reader(sv[0]), writer(sv[1]);
  send_some(writer.fd(), stream);
  ::shutdown(writer.fd(), SHUT_WR);

  uint8_t head[kJoinBytes] = {};
  if (!stream.empty()) std::memcpy(head, stream.data(), std::min(stream.size(), sizeof head));
  int32_t rank = 0, size = 0;
  std::string why;
  uint32_t payload_len = 0;
  std::memcpy(&payload_len, head + 16, sizeof payload_len);
  if (decode_join(head, payload_len, rank, size, why)) {
    FUZZ_CHECK(std::memcmp(&rank, head + 8, 4) == 0 && std::memcmp(&size, head + 12, 4) == 0);
  } else {
    FUZZ_CHECK(!why.empty());
  }

  Frame f;
  std::string err;
  while (recv_frame(reader.fd(), f, Clock::now() + kPatience, err)) {
    FUZZ_CHECK(uint16_t(f.type) >= 1 && uint16_t(f.type) <= 6);
    if (f.type != FrameType::Table) continue;
    std::vector<std::vector<uint8_t>> all;
    if (!decode_table(f.payload, table_size, all)) continue;
    // What was read is what rank 0 wrote: the same table, perhaps with bytes after it.
    FUZZ_CHECK(all.size() == size_t(table_size));
    std::vector<uint8_t> again = encode_table(all);
    FUZZ_CHECK(again.size() <= f.payload.size() &&
               std::equal(again.begin(), again.end(), f.payload.begin()));
  }
  FUZZ_CHECK(!err.empty());
}

void host_port(fuzz::Input& in) {
  Settings s;
  s.rank = int64_t(in.u8()) - 1;  // -1: unset
  s.size = int64_t(in.u8()) - 1;
  std::vector<uint8_t> text = in.rest();
  // A value arrives as a C string (environment, MCA parameter, rdmx_settings_set).
  s.bootstrap.assign(text.begin(), std::find(text.begin(), text.end(), 0));
  std::string host, err;
  uint16_t port = 0;
  if (parse_host_port(s.bootstrap, host, port, err)) {
    FUZZ_CHECK(port >= 1 && !host.empty() && s.bootstrap.find(host) != std::string::npos);
  } else {
    FUZZ_CHECK(!err.empty());
  }
  Config c;
  if (config_from(s, c, err)) {
    FUZZ_CHECK(c.rank >= 0 && c.rank < c.size && c.port == port && c.host == host);
  } else {
    FUZZ_CHECK(!err.empty());
  }
}

}  // namespace
}  // namespace rdmx::bootstrap

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  rdmx_set_log_handler([](int, int32_t, const char*, void*) {}, nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rdmx::fuzz::Input in(data, size);
  switch (in.u8() % 3) {
    case 0: rdmx::bootstrap::lobby(in); break;
    case 1: rdmx::bootstrap::frames(in); break;
    case 2: rdmx::bootstrap::host_port(in); break;
  }
  return 0;
}
