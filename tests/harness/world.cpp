#include "harness/world.h"

#include "harness/leak_check.h"
#include "harness/process_world.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace rdmx::test {

std::vector<uint8_t> address_of(rdmx_context_t* ctx) {
  size_t len = 0;
  rdmx_address(ctx, nullptr, &len);
  std::vector<uint8_t> a(len);
  rdmx_address(ctx, a.data(), &len);
  return a;
}

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

void run_threads(int n, const std::function<void(Rank&)>& body, const SettingList& settings,
                 const std::function<SettingList(int)>& settings_for) {
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
      OwnedSettings owned(settings_for ? settings + settings_for(r) : settings);
      rdmx_init_params_t p{r, n, "loopback", 42, owned.get()};
      int rc = owned.error().empty() ? rdmx_init(&p, &me.ctx) : RDMX_ERR_INVALID;
      if (rc != RDMX_OK) {
        ADD_FAILURE() << "rank " << r << ": rdmx_init: " << rdmx_last_error(nullptr);
        ok = false;
      }
      if (me.ctx) addrs[size_t(r)] = address_of(me.ctx);
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
  if (leaks_found()) ADD_FAILURE() << "the ranks leaked memory (report above)";
}

}  // namespace

// A backend name is a fabric and, for libfabric, a provider, with what it can do.
struct BackendSpec {
  std::string fabric;
  SettingList settings;
  Capabilities caps;
  std::function<SettingList(int)> per_rank = nullptr;  // settings of one rank, if any
};

// What two ranks of one host get through shared memory: small messages in the queue's
// entries and paced by its room, 32 credits for the others, 4 MiB reads.
Capabilities through_shared_memory(Capabilities c) {
  c.small_unbuffered = true;
  c.small_uncredited = true;
  c.credit_window = 32;
  c.read_chunk = 4 << 20;
  return c;
}

// Over verbs the read size is the device's (smaller on a software device).
Capabilities over_verbs(Capabilities c) {
  c.read_chunk = 0;
  return c;
}

BackendSpec spec_of(const std::string& backend) {
  using S = Capabilities::Speed;
  if (backend == "loopback") return {"loopback", {}, {true, false, S::High, S::High}};
  if (backend == "loopback-in-place")
    return {"loopback", {{"RDMX_LOOPBACK_SEND_IN_PLACE", "1"}}, {true, false, S::High, S::High}};
  if (backend == "loopback-unbuffered")
    return {"loopback",
            {{"RDMX_LOOPBACK_SMALL_UNBUFFERED", "1"}},
            {true, false, S::High, S::High, true}};
  if (backend == "loopback-srq")
    return {"loopback", {{"RDMX_SRQ", "1"}}, {true, true, S::Medium, S::Medium}};
  if (backend == "ofi-tcp")
    return {"ofi",
            {{"RDMX_OFI_PROVIDER", "tcp"}, {"RDMX_SHM", "off"}},
            {false, false, S::Medium, S::High, false, 24, 1 << 20, 256 << 10}};
  if (backend == "ofi-tcp-srq") {
    BackendSpec s = spec_of("ofi-tcp");
    s.settings.push_back({"RDMX_SRQ", "1"});
    s.caps.shared_receive = true;
    return s;
  }
  if (backend == "ofi-tcp+shm-srq") {
    // Both paths of one job: rank 0 alone in its shared-memory domain, so that its every
    // peer comes through tcp and the shared receive context (the capabilities are those
    // pairs'), while the other ranks talk among themselves through shared memory.
    BackendSpec s = spec_of("ofi-tcp-srq");
    s.settings = {{"RDMX_OFI_PROVIDER", "tcp"}, {"RDMX_SHM", "on"}, {"RDMX_SRQ", "1"}};
    s.per_rank = [](int r) { return SettingList{{"RDMX_SHM_DOMAIN", r == 0 ? "zero" : "rest"}}; };
    s.caps.mixed_paths = true;
    return s;
  }
  if (backend == "ofi-tcp+shm")
    return {"ofi",
            {{"RDMX_OFI_PROVIDER", "tcp"}, {"RDMX_SHM", "on"}},
            through_shared_memory({false, false, S::Medium, S::High})};
  if (backend == "ofi-verbs")
    return {"ofi",
            {{"RDMX_OFI_PROVIDER", "verbs"}, {"RDMX_SHM", "off"}},
            over_verbs({false, false, S::Low, S::Low})};
  if (backend == "ofi-verbs-srq") {
    BackendSpec s = spec_of("ofi-verbs");
    s.settings.push_back({"RDMX_SRQ", "1"});
    s.caps.shared_receive = true;
    return s;
  }
  if (backend == "shm")
    return {"shm",
            {{"RDMX_SHM_READ", "auto"}},
            through_shared_memory({false, false, S::High, S::High})};
  if (backend == "shm-copy")
    return {"shm",
            {{"RDMX_SHM_READ", "copy"}},
            through_shared_memory({false, false, S::High, S::High})};
  if (backend == "verbs+shm")
    return {"verbs", {{"RDMX_SHM", "on"}}, through_shared_memory({false, false, S::Low, S::Low})};
  if (backend == "verbs")
    return {"verbs", {{"RDMX_SHM", "off"}}, over_verbs({false, false, S::Low, S::Low})};
  if (backend == "verbs-srq") {
    BackendSpec s = {"verbs",
                     {{"RDMX_SRQ", "1"}, {"RDMX_SHM", "off"}},
                     over_verbs({false, true, S::Low, S::Low})};
    s.caps.shared_receive_grows = true;
    return s;
  }
  return {"", {}, {}};
}

std::string probe_backend(const std::string& backend) {
  BackendSpec s = spec_of(backend);
  if (s.fabric.empty()) return "unknown backend name";
  if (s.caps.in_process) return "";
  return probe_init(s.fabric, s.settings);
}

std::string probe_init(const std::string& fabric, const SettingList& settings) {
  // Ask the library itself: a one-rank context either comes up or says why not. It
  // runs in a child process: a device opened here would be inherited by every rank
  // forked later, and the kernel refuses verbs commands from any process but the one
  // that opened it.
  int fds[2];
  if (::pipe(fds) != 0) return "pipe() failed for the backend probe";
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = ::fork();
  if (pid < 0) return "fork() failed for the backend probe";
  if (pid == 0) {
    ::close(fds[0]);
    OwnedSettings owned(settings);
    rdmx_init_params_t p{0, 1, fabric.c_str(), 0, owned.get()};
    rdmx_context_t* ctx = nullptr;
    std::string why = owned.error();
    if (!why.empty())
      ;
    else if (rdmx_init(&p, &ctx) != RDMX_OK)
      why = rdmx_last_error(nullptr);
    else
      rdmx_finalize(ctx);
    if (::write(fds[1], why.data(), why.size()) < 0) _exit(2);
    _exit(0);
  }
  ::close(fds[1]);
  std::string why;
  char buf[512];
  for (ssize_t k; (k = ::read(fds[0], buf, sizeof buf)) > 0;) why.append(buf, size_t(k));
  ::close(fds[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    return "the probe of fabric " + fabric + " crashed (status " + std::to_string(st) + ")";
  return why;
}

Capabilities capabilities(const std::string& backend) { return spec_of(backend).caps; }
std::string backend_fabric(const std::string& backend) { return spec_of(backend).fabric; }
SettingList backend_settings(const std::string& backend) { return spec_of(backend).settings; }

std::string backend_unavailable(const std::string& backend) {
  static std::mutex mu;
  static std::map<std::string, std::string> known;
  std::lock_guard<std::mutex> g(mu);
  auto it = known.find(backend);
  if (it == known.end()) it = known.emplace(backend, probe_backend(backend)).first;
  return it->second;
}

void run_world(const std::string& backend, int n, const std::function<void(Rank&)>& body,
               const SettingList& settings, const std::function<SettingList(int)>& settings_for) {
  BackendSpec s = spec_of(backend);
  if (s.caps.in_process) return run_threads(n, body, s.settings + settings, settings_for);
  run_processes(
      n, s.fabric,
      [&](int r) {
        return s.settings + (s.per_rank ? s.per_rank(r) : SettingList{}) + settings +
               (settings_for ? settings_for(r) : SettingList{});
      },
      body);
}

}  // namespace rdmx::test
