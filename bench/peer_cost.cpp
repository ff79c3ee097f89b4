// bench/peer_cost: what one rank holds for each peer it talks to, on whatever fabric
// RDMX_FABRIC / RDMX_SHM choose. Started by rdmx_launch (or a PMIx launcher) with N
// ranks: rank 0 connects to the others in batches, and after each batch reads its own
// memory and descriptors twice: once every peer so far has exchanged a message with it
// ("connected"), and once each of them has also sent it a window of messages that fill
// its receive buffers ("busy"). The other ranks only answer. Rank 0 prints a line per
// batch and stage, then the cost per peer between the second batch and the last (the
// slope: the first batch carries what a rank holds once, whatever its peers), in a form
// tools read:
//
//   peer_cost: fabric=shm stage=busy peers=64 pss_kb=... rss_kb=... fds=... recv_kb=...
//   peer_cost: fabric=shm stage=busy slope_kb_per_peer=... rss_slope_kb_per_peer=...
//              fds_per_peer=... from=16 to=64
//
// PSS splits a shared page among the processes that map it: a shared-memory connection's
// two segments count half for each side, so the slope depends on the peers' segments as
// well as this rank's (here each peer has one connection, a roomy one: docs/shm.md).
//
// usage: rdmx_launch -n N -- bench/peer_cost [--batch K] [--window W] [--size BYTES]
#include <dirent.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "rdmx/rdmx.h"

namespace {

constexpr int kTimeoutMs = 120000;
enum Tag : int32_t { kHello = 1, kReply = 2, kGo = 3, kWindow = 4, kDone = 5 };

long proc_kb(const char* file, const char* key) {
  FILE* f = std::fopen(file, "r");
  if (!f) return -1;
  char line[256];
  long kb = -1;
  size_t n = std::strlen(key);
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, key, n) == 0) {
      kb = std::strtol(line + n, nullptr, 10);
      break;
    }
  std::fclose(f);
  return kb;
}

int open_fds() {
  DIR* d = opendir("/proc/self/fd");
  if (!d) return -1;
  int n = 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n - 1;  // the directory's own
}

struct Job {
  rdmx_context_t* ctx;
  std::vector<rdmx_request_t*> reqs;

  void check(int rc, const char* what) {
    if (rc == RDMX_OK) return;
    std::fprintf(stderr, "peer_cost: rank %d: %s: %s: %s\n", rdmx_context_rank(ctx), what,
                 rdmx_strerror(rc), rdmx_last_error(ctx));
    std::exit(1);
  }
  void send(int32_t to, int32_t tag, const void* buf, uint64_t len) {
    rdmx_request_t* r = nullptr;
    check(rdmx_isend(ctx, to, 0, tag, buf, len, 0, nullptr, nullptr, &r), "rdmx_isend");
    reqs.push_back(r);
  }
  void recv(int32_t from, int32_t tag, void* buf, uint64_t len) {
    rdmx_request_t* r = nullptr;
    check(rdmx_irecv(ctx, from, 0, tag, buf, len, nullptr, nullptr, &r), "rdmx_irecv");
    reqs.push_back(r);
  }
  void wait_all() {
    for (auto* r : reqs) {
      rdmx_status_info_t st{};
      check(rdmx_wait(ctx, r, kTimeoutMs, &st), "rdmx_wait");
      check(st.error, "a request");
      rdmx_request_free(ctx, r);
    }
    reqs.clear();
  }
};

struct Point {
  int peers;
  long pss_kb, rss_kb;
  int fds;
  uint64_t recv_kb;
};

Point measure(rdmx_context_t* ctx, int peers) {
  rdmx_stats_t s{};
  rdmx_get_stats(ctx, &s);
  return {peers, proc_kb("/proc/self/smaps_rollup", "Pss:"), proc_kb("/proc/self/status", "VmRSS:"),
          open_fds(), (s.receive_buffer_bytes + s.shared_receive_bytes) / 1024};
}

void print(const char* fabric, const char* stage, const std::vector<Point>& pts) {
  for (const Point& p : pts)
    std::printf(
        "peer_cost: fabric=%s stage=%s peers=%d pss_kb=%ld rss_kb=%ld fds=%d recv_kb=%llu\n",
        fabric, stage, p.peers, p.pss_kb, p.rss_kb, p.fds, (unsigned long long)p.recv_kb);
  // From the second batch: the first also carries what the rank touches once, whatever
  // its peers (a shared pool's first pages, the fabric's own start).
  const Point &a = pts[pts.size() > 2 ? 1 : 0], &b = pts.back();
  if (b.peers > a.peers)
    std::printf(
        "peer_cost: fabric=%s stage=%s slope_kb_per_peer=%.1f rss_slope_kb_per_peer=%.1f "
        "fds_per_peer=%.2f from=%d to=%d\n",
        fabric, stage, double(b.pss_kb - a.pss_kb) / (b.peers - a.peers),
        double(b.rss_kb - a.rss_kb) / (b.peers - a.peers),
        double(b.fds - a.fds) / (b.peers - a.peers), a.peers, b.peers);
}

}  // namespace

int main(int argc, char** argv) {
  int batch = 8, window = 64;
  uint64_t size = 4096;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 < argc && a == "--batch") {
      batch = std::atoi(argv[++i]);
    } else if (i + 1 < argc && a == "--window") {
      window = std::atoi(argv[++i]);
    } else if (i + 1 < argc && a == "--size") {
      size = std::strtoull(argv[++i], nullptr, 0);
    } else {
      std::fprintf(stderr, "usage: bench/peer_cost [--batch K] [--window W] [--size BYTES]\n");
      return 2;
    }
  }
  if (batch < 1 || window < 1 || size < 1) {
    std::fprintf(stderr, "peer_cost: --batch, --window and --size must be at least 1\n");
    return 2;
  }
  Job job{};
  if (int rc = rdmx_init_bootstrap(&job.ctx)) {
    std::fprintf(stderr, "peer_cost: %s: %s\n", rdmx_strerror(rc), rdmx_last_error(nullptr));
    return 1;
  }
  int rank = rdmx_context_rank(job.ctx), n = rdmx_context_size(job.ctx);
  std::vector<uint8_t> buf(size * size_t(window) * size_t(batch) + size);
  uint64_t word = 0;
  if (rank != 0) {
    job.recv(0, kHello, &word, sizeof word);
    job.wait_all();
    job.send(0, kReply, &word, sizeof word);
    job.recv(0, kGo, &word, sizeof word);
    job.wait_all();
    for (int i = 0; i < window; ++i) job.send(0, kWindow, buf.data(), size);
    job.recv(0, kDone, &word, sizeof word);
    job.wait_all();
  } else {
    std::vector<Point> connected, busy;
    for (int first = 1; first < n; first += batch) {
      int last = std::min(n, first + batch);
      for (int p = first; p < last; ++p) {
        job.send(p, kHello, &word, sizeof word);
        job.recv(p, kReply, buf.data(), sizeof word);
      }
      job.wait_all();
      connected.push_back(measure(job.ctx, last - 1));
      for (int p = first; p < last; ++p) {
        for (int i = 0; i < window; ++i)
          job.recv(p, kWindow, buf.data() + size * size_t((p - first) * window + i), size);
        job.send(p, kGo, &word, sizeof word);
      }
      job.wait_all();
      busy.push_back(measure(job.ctx, last - 1));
    }
    for (int p = 1; p < n; ++p) job.send(p, kDone, &word, sizeof word);
    job.wait_all();
    const char* fabric = rdmx_fabric_name(job.ctx);
    print(fabric, "connected", connected);
    print(fabric, "busy", busy);
  }
  rdmx_finalize(job.ctx);
  return 0;
}
