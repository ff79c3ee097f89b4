#include "harness/world.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace rdmx::test {

bool Rank::wait(rdmx_request_t* req, rdmx_status_info_t* st, int timeout_ms) {
  int rc = rdmx_wait(ctx, req, timeout_ms, st);
  EXPECT_EQ(rc, RDMX_OK) << "rank " << rank << ": wait failed: " << rdmx_strerror(rc) << " "
                         << rdmx_last_error(ctx);
  return rc == RDMX_OK;
}

rdmx_status_info_t Rank::finish(rdmx_request_t* req, int timeout_ms) {
  rdmx_status_info_t st{};
  st.error = RDMX_ERR_TIMEOUT;
  if (wait(req, &st, timeout_ms)) rdmx_request_free(ctx, req);
  return st;
}

void Rank::barrier() { barrier_fn(); }

namespace {

// A barrier whose waiters keep their contexts progressing.
class ProgressBarrier {
 public:
  explicit ProgressBarrier(int n) : n_(n) {}
  void arrive_and_wait(rdmx_context_t* ctx) {
    int gen = gen_.load();
    if (count_.fetch_add(1) + 1 == n_) {
      count_ = 0;
      gen_.fetch_add(1);
      return;
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (gen_.load() == gen) {
      rdmx_progress(ctx);
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "barrier timed out";
        return;
      }
    }
  }

 private:
  int n_;
  std::atomic<int> count_{0};
  std::atomic<int> gen_{0};
};

void run_threads(int n, const std::function<void(Rank&)>& body, const std::string& settings,
                 const std::function<std::string(int)>& settings_for) {
  std::vector<Rank> ranks(static_cast<size_t>(n));
  std::vector<std::vector<uint8_t>> addrs(static_cast<size_t>(n));
  ProgressBarrier setup(n), done(n);
  std::vector<std::thread> threads;
  std::atomic<bool> ok{true};
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      Rank& me = ranks[size_t(r)];
      me.rank = r;
      me.size = n;
      std::string s = settings;
      if (settings_for) s += "," + settings_for(r);
      rdmx_init_params_t p{r, n, "loopback", 42, s.c_str()};
      int rc = rdmx_init(&p, &me.ctx);
      if (rc != RDMX_OK) {
        ADD_FAILURE() << "rank " << r << ": rdmx_init: " << rdmx_last_error(nullptr);
        ok = false;
      }
      if (me.ctx) {
        size_t len = 0;
        rdmx_address(me.ctx, nullptr, &len);
        addrs[size_t(r)].resize(len);
        rdmx_address(me.ctx, addrs[size_t(r)].data(), &len);
      }
      setup.arrive_and_wait(me.ctx);
      if (ok && me.ctx) {
        for (int q = 0; q < n; ++q)
          rdmx_add_peer(me.ctx, q, addrs[size_t(q)].data(), addrs[size_t(q)].size());
        me.barrier_fn = [&, ctx = me.ctx] { setup.arrive_and_wait(ctx); };
        body(me);
      } else {
        me.barrier_fn = [] {};
      }
      done.arrive_and_wait(me.ctx);
      if (me.ctx) rdmx_finalize(me.ctx);
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace

std::string backend_unavailable(const std::string& backend) {
  if (backend == "loopback") return "";
  return "backend " + backend + " is not available in this build";
}

void run_world(const std::string& backend, int n, const std::function<void(Rank&)>& body,
               const std::string& settings, const std::function<std::string(int)>& settings_for) {
  if (backend == "loopback") return run_threads(n, body, settings, settings_for);
  ADD_FAILURE() << "unknown backend " << backend;
}

}  // namespace rdmx::test
