#include "bootstrap/bootstrap_lobby.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/log.h"

namespace rdmx::bootstrap {
namespace {

constexpr size_t kReasonsKept = 8;
constexpr auto kFdBackoff = std::chrono::milliseconds(100);

std::string address_of(const sockaddr_storage& a, socklen_t len) {
  char host[NI_MAXHOST] = "?", port[NI_MAXSERV] = "?";
  ::getnameinfo(reinterpret_cast<const sockaddr*>(&a), len, host, sizeof host, port, sizeof port,
                NI_NUMERICHOST | NI_NUMERICSERV);
  return std::string(host) + ":" + port;
}

int ms_until(Clock::time_point t, Clock::time_point now) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - now).count();
  return ms <= 0 ? 0 : ms > 1000000 ? 1000000 : int(ms) + 1;
}

}  // namespace

void Lobby::turn_away(Waiting& w, const std::string& why, bool tell) {
  if (tell) {
    // One attempt, without waiting: a stranger gets no more of rank 0's time.
    std::string text = "rank 0 turned this connection away: " + why, ignored;
    send_frame(w.s.fd(), FrameType::Fail, 0, size_, text.data(), text.size(), Clock::now(),
               ignored);
  }
  RDMX_LOG(LogLevel::Warn, 0, "bootstrap: turned away a connection from %s: %s", w.from.c_str(),
           why.c_str());
  if (reasons_.size() < kReasonsKept) reasons_.push_back(w.from + ": " + why);
  ++turned_away_;
  w.s.reset();
}

void Lobby::accept_all(Clock::time_point now) {
  if (now < backoff_until_) return;
  for (;;) {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    int fd = ::accept4(listener_.fd(), reinterpret_cast<sockaddr*>(&a), &len,
                       SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: the longest-waiting stranger makes room; with none to drop,
        // wait a little instead of spinning on a listener that stays readable.
        if (waiting_.empty()) {
          backoff_until_ = now + kFdBackoff;
          return;
        }
        turn_away(waiting_.front(), "dropped to make room (no file descriptors left)", false);
        waiting_.erase(waiting_.begin());
        continue;
      }
      return;  // EAGAIN: nobody else is knocking
    }
    if (waiting_.size() >= kMaxWaiting) {
      turn_away(waiting_.front(), "dropped to make room (too many connections waiting)", false);
      waiting_.erase(waiting_.begin());
    }
    Waiting w;
    w.s = Socket(fd);
    w.from = address_of(a, len);
    w.since = now;
    if (key_) {
      // The challenge goes out at once, without waiting: it fits the socket's buffer.
      std::string err;
      if (!fresh_challenge(w.challenge.data()) ||
          !send_frame(fd, FrameType::Challenge, 0, size_, w.challenge.data(), kChallengeBytes, now,
                      err)) {
        turn_away(w, "could not be challenged: " + err, false);
        continue;
      }
    }
    waiting_.push_back(std::move(w));
  }
}

bool Lobby::read(Waiting& w, std::vector<Socket>& ranks) {
  for (;;) {
    ssize_t k = ::recv(w.s.fd(), w.buf + w.got, join_bytes() - w.got, MSG_DONTWAIT);
    if (k > 0) {
      w.got += size_t(k);
      if (w.got == join_bytes()) break;
      // A header that is no join of the expected length is turned away without waiting
      // for bytes that may never come.
      int32_t r = 0, n = 0;
      std::string why;
      if (w.got >= kJoinBytes && !decode_join(w.buf, join_bytes() - kJoinBytes, r, n, why)) {
        turn_away(w, why, false);
        return true;
      }
      continue;
    }
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    turn_away(w, k == 0 ? "closed before it said which rank it is" : std::strerror(errno), false);
    return true;
  }
  int32_t rank = 0, size = 0;
  std::string why;
  if (!decode_join(w.buf, join_bytes() - kJoinBytes, rank, size, why)) {
    turn_away(w, why, false);
    return true;
  }
  if (size != size_) {
    turn_away(w,
              "rank " + std::to_string(rank) + " has RDMX_SIZE=" + std::to_string(size) +
                  " but rank 0 has RDMX_SIZE=" + std::to_string(size_),
              true);
    return true;
  }
  if (rank < 1 || rank >= size_) {
    turn_away(
        w, "claims rank " + std::to_string(rank) + ", not one of 1.." + std::to_string(size_ - 1),
        true);
    return true;
  }
  if (ranks[size_t(rank)]) {
    turn_away(w,
              "claims rank " + std::to_string(rank) +
                  ", which has joined already (check RDMX_RANK: every rank needs its own)",
              true);
    return true;
  }
  if (key_ && !check_join(*key_, w.challenge.data(), rank, size, w.buf + kJoinBytes)) {
    turn_away(w,
              "claims rank " + std::to_string(rank) +
                  " but did not prove it knows the job secret (RDMX_JOB_SECRET)",
              true);
    return true;
  }
  challenges_[size_t(rank)] = w.challenge;
  ranks[size_t(rank)] = std::move(w.s);
  ++joined_;
  return true;
}

bool Lobby::fill(std::vector<Socket>& ranks, Deadline d) {
  // accept_all() takes every pending connection and stops at EAGAIN.
  int fl = ::fcntl(listener_.fd(), F_GETFL);
  if (fl < 0 || ::fcntl(listener_.fd(), F_SETFL, fl | O_NONBLOCK) < 0) return false;
  std::vector<pollfd> fds;
  while (joined_ < size_ - 1) {
    auto now = Clock::now();
    if (now >= d) return false;
    // Strangers that said nothing for too long go.
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (now - it->since < kIdleLimit) {
        ++it;
        continue;
      }
      turn_away(*it, "said nothing for " + std::to_string(kIdleLimit.count()) + " s", false);
      it = waiting_.erase(it);
    }
    Clock::time_point wake = d;
    for (auto& w : waiting_) wake = std::min(wake, w.since + kIdleLimit);
    bool listening = now >= backoff_until_;
    if (!listening) wake = std::min(wake, backoff_until_);
    fds.clear();
    fds.push_back({listener_.fd(), short(listening ? POLLIN : 0), 0});
    for (auto& w : waiting_) fds.push_back({w.s.fd(), POLLIN, 0});
    int n = ::poll(fds.data(), fds.size(), ms_until(wake, now));
    if (n < 0 && errno != EINTR) return false;
    // Connections that spoke first (the listener's new ones are read on the next round).
    size_t i = 1;
    for (auto it = waiting_.begin(); it != waiting_.end(); ++i) {
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) && read(*it, ranks))
        it = waiting_.erase(it);
      else
        ++it;
    }
    if (fds[0].revents & POLLIN) accept_all(Clock::now());
  }
  waiting_.clear();
  return true;
}

std::string Lobby::turned_away() const {
  if (turned_away_ == 0) return "";
  std::string s = "; rank 0 turned away " + std::to_string(turned_away_) + " connection" +
                  (turned_away_ > 1 ? "s" : "") + " (";
  for (size_t i = 0; i < reasons_.size(); ++i) s += (i ? "; " : "") + reasons_[i];
  if (turned_away_ > reasons_.size()) s += "; ...";
  return s + ")";
}

}  // namespace rdmx::bootstrap
