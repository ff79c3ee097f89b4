#include "tools/perf_loops.h"

#include <chrono>
#include <string>

namespace rdmx::tools {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int32_t kTagData = 1;
constexpr int32_t kTagAck = 2;
constexpr int32_t kTagMeet = 3;

// Microseconds from t0 to now; t0 moves to now, so that back-to-back iterations read the
// clock once each (a system call where the clock source has no vDSO path, as in a VM).
double lap_us(Clock::time_point& t0) {
  auto now = Clock::now();
  double us = std::chrono::duration<double, std::micro>(now - t0).count();
  t0 = now;
  return us;
}

// The requests of one iteration or window, and the waiting for them.
class Batch {
 public:
  Batch(const RankEnv& env, int timeout_ms, std::string& error)
      : env_(env), timeout_ms_(timeout_ms), error_(error) {}
  ~Batch() {
    for (auto* r : reqs_) rdmx_request_free(env_.ctx, r);
  }

  bool send(const void* buf, uint64_t len, int32_t tag) {
    rdmx_request_t* r = nullptr;
    int rc = rdmx_isend(env_.ctx, env_.peer, 0, tag, buf, len, 0, nullptr, nullptr, &r);
    return posted(rc, r, "rdmx_isend", len);
  }
  bool recv(void* buf, uint64_t len, int32_t tag) {
    rdmx_request_t* r = nullptr;
    int rc = rdmx_irecv(env_.ctx, env_.peer, 0, tag, buf, len, nullptr, nullptr, &r);
    return posted(rc, r, "rdmx_irecv", len);
  }

  // Waits for every request posted since the last wait, then frees them.
  bool wait() {
    Clock::time_point deadline{};  // read the clock only once a wait is long
    for (size_t i = 0; i < reqs_.size();) {
      int done = 0;
      rdmx_status_info_t st{};
      if (int rc = rdmx_test(reqs_[i], &done, &st)) return fail("rdmx_test", rc);
      if (done) {
        if (st.error != RDMX_OK) return fail("a request", st.error);
        ++i;
        continue;
      }
      rdmx_progress(env_.ctx);
      if ((++polls_ & 1023) == 0) {
        if (env_.failed->load()) return fail("the other rank failed", RDMX_OK);
        auto now = Clock::now();
        if (deadline == Clock::time_point{})
          deadline = now + std::chrono::milliseconds(timeout_ms_);
        else if (now > deadline)
          return fail(("no completion within " + std::to_string(timeout_ms_) + " ms").c_str(),
                      RDMX_OK);
      }
    }
    for (auto* r : reqs_) rdmx_request_free(env_.ctx, r);
    reqs_.clear();
    return true;
  }

 private:
  bool posted(int rc, rdmx_request_t* r, const char* what, uint64_t len) {
    if (rc != RDMX_OK)
      return fail((std::string(what) + " of " + std::to_string(len) + " bytes").c_str(), rc);
    reqs_.push_back(r);
    return true;
  }
  bool fail(const char* what, int rc) {
    error_ = what;
    if (rc != RDMX_OK)
      error_ += std::string(": ") + rdmx_strerror(rc) + ": " + rdmx_last_error(env_.ctx);
    return false;
  }

  const RankEnv& env_;
  int timeout_ms_;
  std::string& error_;
  std::vector<rdmx_request_t*> reqs_;
  unsigned polls_ = 0;
};

// The measured loops stay functions of their own (not inlined into the caller), so that a
// profiler can count inside them only (bench/count-verbs: callgrind --toggle-collect).
[[gnu::noinline]] bool latency(const RankEnv& env, const Step& s, uint8_t* buf,
                               std::vector<double>& out, std::string& error) {
  Batch b(env, s.timeout_ms, error);
  uint8_t* in = buf + s.size;
  auto t0 = Clock::now();
  for (int i = -s.warmup; i < s.iters; ++i) {
    if (env.role == 0) {
      if (!b.recv(in, s.size, kTagData) || !b.send(buf, s.size, kTagData) || !b.wait())
        return false;
      double us = lap_us(t0);
      if (i >= 0) out.push_back(us / 2);
    } else {
      if (!b.recv(in, s.size, kTagData) || !b.wait()) return false;
      if (!b.send(buf, s.size, kTagData) || !b.wait()) return false;
    }
  }
  return true;
}

// A window of sends from role 0 (and from role 1 too when both), each window closed by
// a zero-byte acknowledgement from role 1.
[[gnu::noinline]] bool windows(const RankEnv& env, const Step& s, bool both, uint8_t* buf,
                               std::vector<double>& out, std::string& error) {
  Batch b(env, s.timeout_ms, error);
  uint8_t* in = buf + s.size;
  bool sender = env.role == 0 || both, receiver = env.role == 1 || both;
  auto t0 = Clock::now();
  for (int i = -s.warmup; i < s.iters; ++i) {
    if (env.role == 0 && !b.recv(nullptr, 0, kTagAck)) return false;
    for (int w = 0; receiver && w < s.window; ++w)
      if (!b.recv(in, s.size, kTagData)) return false;
    for (int w = 0; sender && w < s.window; ++w)
      if (!b.send(buf, s.size, kTagData)) return false;
    if (!b.wait()) return false;
    if (env.role == 1 && (!b.send(nullptr, 0, kTagAck) || !b.wait())) return false;
    if (env.role != 0) continue;
    double us = lap_us(t0);
    if (i >= 0) out.push_back(us);
  }
  return true;
}

}  // namespace

const char* test_name(Test t) {
  switch (t) {
    case Test::kLatency: return "lat";
    case Test::kBandwidth: return "bw";
    case Test::kBidirectional: return "bibw";
    case Test::kMessageRate: return "mr";
  }
  return "?";
}

bool run_step(const RankEnv& env, Test test, const Step& step, uint8_t* buf,
              std::vector<double>& samples_us, std::string& error) {
  samples_us.clear();
  samples_us.reserve(size_t(step.iters));
  bool ok = test == Test::kLatency
                ? latency(env, step, buf, samples_us, error)
                : windows(env, step, test == Test::kBidirectional, buf, samples_us, error);
  if (!ok) {
    error = std::string(test_name(test)) + " at " + std::to_string(step.size) + " bytes, rank " +
            std::to_string(env.rank) + ": " + error;
    env.failed->store(true);
  }
  return ok;
}

bool meet(const RankEnv& env, int timeout_ms, std::string& error) {
  Batch b(env, timeout_ms, error);
  bool ok = b.recv(nullptr, 0, kTagMeet) && b.send(nullptr, 0, kTagMeet) && b.wait();
  if (!ok) env.failed->store(true);
  return ok;
}

}  // namespace rdmx::tools
