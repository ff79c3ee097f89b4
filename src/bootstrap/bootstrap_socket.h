// TCP plumbing for the standalone bootstrap: an owned socket, host:port parsing,
// listening, connecting with retries, and framed messages. Every blocking step takes
// a deadline and gives up at it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace rdmx::bootstrap {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

// Rank 0 holds one connection per rank: a job larger than this is for a launcher's own
// bootstrap (mpirun, srun), not for rank 0's listener.
inline constexpr int32_t kMaxRanks = 65536;

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { reset(); }
  Socket(Socket&& o) noexcept : fd_(o.release()) {}
  Socket& operator=(Socket&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.release();
    }
    return *this;
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset();

 private:
  int fd_ = -1;
};

// "host:port" or "[v6addr]:port"; port 1..65535.
bool parse_host_port(const std::string& text, std::string& host, uint16_t& port, std::string& err);

// Listens on port on every local address (IPv6 and IPv4 where possible).
bool listen_on(uint16_t port, Socket& out, std::string& err);
// Connects to host:port, retrying while nobody listens yet, until the deadline.
bool connect_to(const std::string& host, uint16_t port, Deadline d, Socket& out, std::string& err);
// Waits until fd is readable; false at the deadline.
bool wait_readable(int fd, Deadline d);

// A framed message: a fixed header, then len bytes.
enum class FrameType : uint16_t {
  Join = 1,       // rank k -> 0: {rank, size}
  Key = 2,        // 0 -> k: the job key (8 bytes)
  Address = 3,    // k -> 0: the rank's address blob
  Table = 4,      // 0 -> k: every rank's address, each as u32 length + bytes
  Fail = 5,       // either way: why the job cannot start, in words
  Challenge = 6,  // 0 -> k, first, when the job has a secret: bytes to prove it over
};

struct Frame {
  FrameType type{};
  int32_t rank = 0;
  int32_t size = 0;
  std::vector<uint8_t> payload;
};

bool send_frame(int fd, FrameType t, int32_t rank, int32_t size, const void* data, size_t len,
                Deadline d, std::string& err);
// False on error, end of stream or the deadline (err says which).
bool recv_frame(int fd, Frame& out, Deadline d, std::string& err);

// A Join frame is a header of this many bytes, followed by payload_len bytes (a proof
// of the job secret, or nothing). decode_join checks the header of one read from a
// stranger: true with rank and size, or false with why in words.
inline constexpr size_t kJoinBytes = 20;
bool decode_join(const uint8_t* header, size_t payload_len, int32_t& rank, int32_t& size,
                 std::string& why);

// A Table frame's payload: every rank's address in rank order, each as a u32 length and
// then its bytes. decode_table reads size addresses into all; false if the payload holds
// fewer (bytes after the last one are ignored).
std::vector<uint8_t> encode_table(const std::vector<std::vector<uint8_t>>& all);
bool decode_table(const std::vector<uint8_t>& payload, int32_t size,
                  std::vector<std::vector<uint8_t>>& all);

}  // namespace rdmx::bootstrap
