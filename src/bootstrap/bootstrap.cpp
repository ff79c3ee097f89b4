#include "bootstrap/bootstrap.h"

#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <cstring>
#include <random>

#include "bootstrap/bootstrap_lobby.h"
#include "bootstrap/bootstrap_proof.h"
#include "core/job_secret.h"
#include "protocol/connect_msg.h"
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

// Rank 0 holds a connection to every other rank: make sure it may, raising its soft
// limit on open files up to the hard one if needed.
bool enough_descriptors(int32_t size, std::string& err) {
  constexpr rlim_t kSpare = 64;  // for the fabric, the listener and strangers
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return true;
  rlim_t need = rlim_t(size) + kSpare;
  if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < need) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max == RLIM_INFINITY ? need : std::min(need, lim.rlim_max);
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < need) {
    err = "rank 0 needs about " + std::to_string(need) +
          " open files for RDMX_SIZE=" + std::to_string(size) + " but may open only " +
          std::to_string(lim.rlim_cur) + " (raise it with ulimit -n)";
    return false;
  }
  return true;
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
  if (!s.job_secret.empty() && s.auth != "job-key") {
    std::vector<uint8_t> secret = secret_from_hex(s.job_secret);
    out.has_secret = true;
    out.key = protocol::secret_mac_key(secret.data(), secret.size());
  }
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
    uint8_t challenge[kChallengeBytes] = {};
    uint8_t proof[kProofBytes];
    if (cfg_.has_secret) {
      Frame c;
      if (!recv_frame(root_.fd(), c, d, err)) {
        err = "waiting for rank 0's challenge at " + where() + ": " + err +
              " (a rank 0 without a job secret sends none: is RDMX_JOB_SECRET set on every "
              "rank?)";
        return RDMX_ERR_TIMEOUT;
      }
      if (c.type != FrameType::Challenge || c.payload.size() != kChallengeBytes) {
        err = "rank 0 at " + where() +
              " did not ask for proof of the job secret: it has none (is RDMX_JOB_SECRET set "
              "on every rank?)";
        return RDMX_ERR_PROTOCOL;
      }
      std::memcpy(challenge, c.payload.data(), kChallengeBytes);
      prove_join(cfg_.key, challenge, cfg_.rank, cfg_.size, proof);
    }
    if (!send_frame(root_.fd(), FrameType::Join, cfg_.rank, cfg_.size, proof,
                    cfg_.has_secret ? kProofBytes : 0, d, err)) {
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
    if (f.type == FrameType::Challenge) {
      err = "rank 0 at " + where() +
            " asks for proof of the job secret, but RDMX_JOB_SECRET is not set on rank " +
            std::to_string(cfg_.rank) + " (rdmx_launch sets one for every rank of a job)";
      return RDMX_ERR_PROTOCOL;
    }
    size_t want = sizeof job_key + (cfg_.has_secret ? kRootProofBytes : 0);
    if (f.type != FrameType::Key || f.payload.size() != want) {
      err = "rank 0 sent an unexpected bootstrap message";
      return RDMX_ERR_PROTOCOL;
    }
    std::memcpy(&job_key, f.payload.data(), sizeof job_key);
    if (cfg_.has_secret &&
        !check_root(cfg_.key, challenge, job_key, f.payload.data() + sizeof job_key)) {
      err = "the rank 0 at " + where() + " did not prove it knows the job secret";
      return RDMX_ERR_PROTOCOL;
    }
    return RDMX_OK;
  }

  if (!listen_on(cfg_.port, listener_, err)) {
    err = "rank 0 " + err + " (RDMX_BOOTSTRAP=" + where() + ")";
    return RDMX_ERR_UNREACHABLE;
  }
  if (!enough_descriptors(cfg_.size, err)) return RDMX_ERR_NO_MEMORY;
  ranks_.resize(size_t(cfg_.size));
  Lobby lobby(cfg_.size, listener_, cfg_.has_secret ? &cfg_.key : nullptr);
  if (!lobby.fill(ranks_, d)) {
    std::vector<int32_t> missing;
    for (int32_t r = 1; r < cfg_.size; ++r)
      if (!ranks_[size_t(r)]) missing.push_back(r);
    return fail_all(RDMX_ERR_TIMEOUT,
                    "timed out after " + std::to_string(cfg_.timeout_ms) +
                        " ms (RDMX_BOOTSTRAP_TIMEOUT_MS) waiting for rank" +
                        (missing.size() > 1 ? "s " : " ") + list_ranks(missing) + " of " +
                        std::to_string(cfg_.size) + " to connect to rank 0 at " + where() +
                        lobby.turned_away(),
                    err);
  }
  listener_.reset();
  job_key = random_job_key();
  for (int32_t r = 1; r < cfg_.size; ++r) {
    uint8_t key_frame[sizeof job_key + kRootProofBytes];
    std::memcpy(key_frame, &job_key, sizeof job_key);
    if (cfg_.has_secret)
      prove_root(cfg_.key, lobby.challenge_of(r), job_key, key_frame + sizeof job_key);
    size_t n = sizeof job_key + (cfg_.has_secret ? kRootProofBytes : 0);
    if (!send_frame(ranks_[size_t(r)].fd(), FrameType::Key, 0, cfg_.size, key_frame, n, d, err))
      return fail_all(RDMX_ERR_UNREACHABLE,
                      "rank " + std::to_string(r) + " went away during the bootstrap: " + err, err);
  }
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
    if (f.type != FrameType::Table || !decode_table(f.payload, cfg_.size, all)) {
      err = "rank 0 sent a malformed address table";
      return RDMX_ERR_PROTOCOL;
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
  std::vector<uint8_t> table = encode_table(all);
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
