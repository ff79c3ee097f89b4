#include "bootstrap/bootstrap.h"

#include <poll.h>
#include <sys/socket.h>

#include <cstring>
#include <random>

#include "rdmx/rdmx.h"

namespace rdmx::bootstrap {
namespace {

// The other ranks wait this much longer than rank 0, so that when rank 0 gives up they
// hear its reason (which names the missing ranks) instead of timing out themselves.
constexpr auto kVerdictGrace = std::chrono::seconds(2);

// "2", "2 and 5", "2, 5 and 7" (the first 20, then how many more).
std::string list_ranks(const std::vector<int32_t>& v) {
  std::string s;
  size_t shown = std::min<size_t>(v.size(), 20);
  for (size_t i = 0; i < shown; ++i) {
    if (i) s += i + 1 == shown && shown == v.size() ? " and " : ", ";
    s += std::to_string(v[i]);
  }
  if (shown < v.size()) s += " and " + std::to_string(v.size() - shown) + " more";
  return s;
}

uint64_t random_job_key() {
  std::random_device rd;
  uint64_t k = 0;
  while (k == 0) k = uint64_t(rd()) << 32 ^ rd();  // 0 would mean "no key checked"
  return k;
}

}  // namespace

bool config_from(const Settings& s, Config& out, std::string& err) {
  const char* how =
      " (set RDMX_RANK, RDMX_SIZE and RDMX_BOOTSTRAP=host:port, or start the "
      "ranks with rdmx_launch)";
  if (s.rank < 0) {
    err = std::string("RDMX_RANK is not set") + how;
    return false;
  }
  if (s.size < 1) {
    err = std::string("RDMX_SIZE is not set") + how;
    return false;
  }
  if (s.rank >= s.size) {
    err =
        "RDMX_RANK=" + std::to_string(s.rank) + " is not below RDMX_SIZE=" + std::to_string(s.size);
    return false;
  }
  if (s.bootstrap.empty()) {
    err = std::string("RDMX_BOOTSTRAP is not set") + how;
    return false;
  }
  if (!parse_host_port(s.bootstrap, out.host, out.port, err)) {
    err = "RDMX_BOOTSTRAP=" + err;
    return false;
  }
  out.rank = int32_t(s.rank);
  out.size = int32_t(s.size);
  out.timeout_ms = s.bootstrap_wait_ms;
  return true;
}

Deadline Bootstrap::deadline() const {
  return Clock::now() + std::chrono::milliseconds(cfg_.timeout_ms);
}

std::string Bootstrap::where() const { return cfg_.host + ":" + std::to_string(cfg_.port); }

int Bootstrap::fail_all(int code, const std::string& why, std::string& err) {
  auto d = Clock::now() + std::chrono::seconds(2);
  std::string ignored;
  for (auto& s : ranks_)
    if (s) send_frame(s.fd(), FrameType::Fail, 0, cfg_.size, why.data(), why.size(), d, ignored);
  ranks_.clear();
  listener_.reset();
  err = why;
  return code;
}

int Bootstrap::join(const Config& c, uint64_t& job_key, std::string& err) {
  cfg_ = c;
  auto d = deadline();
  if (cfg_.rank != 0) {
    if (!connect_to(cfg_.host, cfg_.port, d, root_, err)) {
      err = "rank " + std::to_string(cfg_.rank) + " found no rank 0 at " + where() + " within " +
            std::to_string(cfg_.timeout_ms) + " ms (RDMX_BOOTSTRAP_TIMEOUT_MS): " + err;
      return RDMX_ERR_TIMEOUT;
    }
    if (!send_frame(root_.fd(), FrameType::Join, cfg_.rank, cfg_.size, nullptr, 0, d, err)) {
      err = "sending to rank 0 at " + where() + ": " + err;
      return RDMX_ERR_UNREACHABLE;
    }
    Frame f;
    if (!recv_frame(root_.fd(), f, d + kVerdictGrace, err)) {
      err = "waiting for rank 0 at " + where() + " to start the job (" +
            std::to_string(cfg_.timeout_ms) + " ms, RDMX_BOOTSTRAP_TIMEOUT_MS): " + err;
      return RDMX_ERR_TIMEOUT;
    }
    if (f.type == FrameType::Fail) {
      err = "rank 0 gave up: " + std::string(f.payload.begin(), f.payload.end());
      return RDMX_ERR_TIMEOUT;
    }
    if (f.type != FrameType::Key || f.payload.size() != sizeof job_key) {
      err = "rank 0 sent an unexpected bootstrap message";
      return RDMX_ERR_PROTOCOL;
    }
    std::memcpy(&job_key, f.payload.data(), sizeof job_key);
    return RDMX_OK;
  }

  if (!listen_on(cfg_.port, listener_, err)) {
    err = "rank 0 " + err + " (RDMX_BOOTSTRAP=" + where() + ")";
    return RDMX_ERR_UNREACHABLE;
  }
  ranks_.resize(size_t(cfg_.size));
  std::vector<Socket> unknown;  // accepted, not yet introduced
  int32_t joined = 1;
  while (joined < cfg_.size) {
    std::vector<pollfd> fds{{listener_.fd(), POLLIN, 0}};
    for (auto& s : unknown) fds.push_back({s.fd(), POLLIN, 0});
    int left = int(std::max<int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(d - Clock::now()).count()));
    if (left == 0 || ::poll(fds.data(), fds.size(), left) == 0) {
      std::vector<int32_t> missing;
      for (int32_t r = 1; r < cfg_.size; ++r)
        if (!ranks_[size_t(r)]) missing.push_back(r);
      return fail_all(RDMX_ERR_TIMEOUT,
                      "timed out after " + std::to_string(cfg_.timeout_ms) +
                          " ms (RDMX_BOOTSTRAP_TIMEOUT_MS) waiting for rank" +
                          (missing.size() > 1 ? "s " : " ") + list_ranks(missing) + " of " +
                          std::to_string(cfg_.size) + " to connect to rank 0 at " + where(),
                      err);
    }
    if (fds[0].revents & POLLIN) {
      int fd = ::accept4(listener_.fd(), nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) unknown.emplace_back(fd);
    }
    for (size_t i = fds.size() - 1; i >= 1; --i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Socket s = std::move(unknown[i - 1]);
      unknown.erase(unknown.begin() + long(i - 1));
      Frame f;
      std::string why;
      if (!recv_frame(s.fd(), f, Clock::now() + std::chrono::seconds(5), why) ||
          f.type != FrameType::Join)
        continue;  // not a rank of this job: ignore it
      if (f.size != cfg_.size) {
        std::string text = "rank " + std::to_string(f.rank) +
                           " has RDMX_SIZE=" + std::to_string(f.size) +
                           " but rank 0 has RDMX_SIZE=" + std::to_string(cfg_.size);
        ranks_.push_back(std::move(s));  // it hears the reason too
        return fail_all(RDMX_ERR_INVALID, text, err);
      }
      if (f.rank < 1 || f.rank >= cfg_.size || ranks_[size_t(f.rank)]) {
        std::string text = "a second process claims rank " + std::to_string(f.rank) +
                           " (check RDMX_RANK: every rank needs its own)";
        ranks_.push_back(std::move(s));  // it hears the reason too
        return fail_all(RDMX_ERR_INVALID, text, err);
      }
      ranks_[size_t(f.rank)] = std::move(s);
      ++joined;
    }
  }
  listener_.reset();
  job_key = random_job_key();
  for (int32_t r = 1; r < cfg_.size; ++r)
    if (!send_frame(ranks_[size_t(r)].fd(), FrameType::Key, 0, cfg_.size, &job_key, sizeof job_key,
                    d, err))
      return fail_all(RDMX_ERR_UNREACHABLE,
                      "rank " + std::to_string(r) + " went away during the bootstrap: " + err, err);
  return RDMX_OK;
}

int Bootstrap::exchange(const std::vector<uint8_t>& mine, std::vector<std::vector<uint8_t>>& all,
                        std::string& err) {
  auto d = deadline();
  all.assign(size_t(cfg_.size), {});
  if (cfg_.rank != 0) {
    Frame f;
    if (!send_frame(root_.fd(), FrameType::Address, cfg_.rank, cfg_.size, mine.data(), mine.size(),
                    d, err) ||
        !recv_frame(root_.fd(), f, d + kVerdictGrace, err)) {
      err = "exchanging addresses with rank 0 at " + where() + ": " + err;
      return RDMX_ERR_TIMEOUT;
    }
    if (f.type == FrameType::Fail) {
      err = "rank 0 gave up: " + std::string(f.payload.begin(), f.payload.end());
      return RDMX_ERR_PEER_LOST;
    }
    const uint8_t* p = f.payload.data();
    const uint8_t* end = p + f.payload.size();
    for (int32_t r = 0; r < cfg_.size; ++r) {
      uint32_t len = 0;
      if (f.type != FrameType::Table || end - p < 4 ||
          (std::memcpy(&len, p, 4), end - p - 4 < len)) {
        err = "rank 0 sent a malformed address table";
        return RDMX_ERR_PROTOCOL;
      }
      all[size_t(r)].assign(p + 4, p + 4 + len);
      p += 4 + len;
    }
    root_.reset();
    return RDMX_OK;
  }
  all[0] = mine;
  for (int32_t r = 1; r < cfg_.size; ++r) {
    Frame f;
    if (!recv_frame(ranks_[size_t(r)].fd(), f, d, err))
      return fail_all(RDMX_ERR_TIMEOUT,
                      "rank " + std::to_string(r) + " did not send its address: " + err, err);
    if (f.type == FrameType::Fail)
      return fail_all(RDMX_ERR_PEER_LOST,
                      "rank " + std::to_string(r) + " could not initialise: " +
                          std::string(f.payload.begin(), f.payload.end()),
                      err);
    if (f.type != FrameType::Address)
      return fail_all(RDMX_ERR_PROTOCOL,
                      "rank " + std::to_string(r) + " sent an unexpected bootstrap message", err);
    all[size_t(r)] = std::move(f.payload);
  }
  std::vector<uint8_t> table;
  for (auto& a : all) {
    uint32_t len = uint32_t(a.size());
    table.insert(table.end(), reinterpret_cast<uint8_t*>(&len),
                 reinterpret_cast<uint8_t*>(&len) + 4);
    table.insert(table.end(), a.begin(), a.end());
  }
  for (int32_t r = 1; r < cfg_.size; ++r)
    if (!send_frame(ranks_[size_t(r)].fd(), FrameType::Table, 0, cfg_.size, table.data(),
                    table.size(), d, err))
      return fail_all(RDMX_ERR_PEER_LOST,
                      "rank " + std::to_string(r) + " went away during the bootstrap: " + err, err);
  ranks_.clear();
  return RDMX_OK;
}

void Bootstrap::abort(const std::string& why) {
  std::string ignored;
  auto d = Clock::now() + std::chrono::seconds(2);
  if (cfg_.rank == 0) {
    fail_all(RDMX_ERR_PEER_LOST, "rank 0 could not initialise: " + why, ignored);
  } else if (root_) {
    send_frame(root_.fd(), FrameType::Fail, cfg_.rank, cfg_.size, why.data(), why.size(), d,
               ignored);
    root_.reset();
  }
}

}  // namespace rdmx::bootstrap
