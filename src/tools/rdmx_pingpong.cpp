// rdmx_pingpong: two ranks exchange messages through rdmx and print a latency and
// bandwidth table. Without RDMX_RANK both ranks run in this process (one thread each,
// each with its own context and endpoint), so it needs no launcher; with RDMX_RANK set
// (rdmx_launch -n 2 -- rdmx_pingpong) it is one rank of a two-process job started by
// the standalone bootstrap. The fabric is RDMX_FABRIC's or --fabric's choice, and the
// data really crosses it.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "rdmx/rdmx.h"

namespace {

struct Options {
  std::string fabric;
  uint64_t max_size = 4 << 20;
  int iters = 1000;
  int window = 16;
};

void usage() {
  std::fprintf(stderr,
               "usage: rdmx_pingpong [--fabric auto|loopback|verbs|ofi] [--max-size BYTES] "
               "[--iters N]\n");
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&](const char* what) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "rdmx_pingpong: %s needs a value\n", what);
        return nullptr;
      }
      return argv[++i];
    };
    const char* v = nullptr;
    if (a == "--fabric" && (v = next("--fabric"))) {
      o.fabric = v;
    } else if (a == "--max-size" && (v = next("--max-size"))) {
      o.max_size = std::strtoull(v, nullptr, 0);
    } else if (a == "--iters" && (v = next("--iters"))) {
      o.iters = std::atoi(v);
    } else {
      usage();
      return false;
    }
    if (o.iters < 1 || o.max_size < 1) {
      std::fprintf(stderr, "rdmx_pingpong: --iters and --max-size must be at least 1\n");
      return false;
    }
  }
  return true;
}

struct Shared {
  std::vector<uint8_t> addr[2];
  std::atomic<int> ready{0};
  std::atomic<bool> failed{false};
};

constexpr int kRows = 40;

bool wait(rdmx_context_t* c, rdmx_request_t* r) {
  rdmx_status_info_t st{};
  int rc = rdmx_wait(c, r, 60000, &st);
  if (rc == RDMX_OK && st.error != RDMX_OK) rc = st.error;
  if (rc != RDMX_OK) {
    std::fprintf(stderr, "rdmx_pingpong: %s: %s\n", rdmx_strerror(rc), rdmx_last_error(c));
    return false;
  }
  rdmx_request_free(c, r);
  return true;
}

void spin_until(Shared& s, int target, rdmx_context_t* c) {
  while (s.ready.load() < target && !s.failed) rdmx_progress(c);
}

int iters_for(uint64_t size, int base) {
  int n = base;
  if (size >= 65536) n = base / 10;
  if (size >= 1 << 20) n = base / 50;
  return n < 4 ? 4 : n;
}

// The measurement proper, on an initialised context whose peer is added; failed is
// shared with the other rank when both run in this process.
void measure(rdmx_context_t* c, int rank, const Options& o, std::atomic<bool>& failed,
             double* lat_us, double* bw_mbs) {
  std::vector<uint8_t> buf(o.max_size), ack(1);
  int peer = 1 - rank, row = 0;
  for (uint64_t size = 1; size <= o.max_size && !failed && row < kRows; size *= 4, ++row) {
    int n = iters_for(size, o.iters);
    // Latency: ping-pong, half the round trip.
    auto t0 = std::chrono::steady_clock::now();
    for (int i = -2; i < n; ++i) {  // two warm-up rounds
      if (i == 0) t0 = std::chrono::steady_clock::now();
      rdmx_request_t* r;
      if (rank == 0) {
        rdmx_isend(c, peer, 0, 1, buf.data(), size, 0, nullptr, nullptr, &r);
        if (!wait(c, r)) failed = true;
        rdmx_irecv(c, peer, 0, 1, buf.data(), size, nullptr, nullptr, &r);
        if (!wait(c, r)) failed = true;
      } else {
        rdmx_irecv(c, peer, 0, 1, buf.data(), size, nullptr, nullptr, &r);
        if (!wait(c, r)) failed = true;
        rdmx_isend(c, peer, 0, 1, buf.data(), size, 0, nullptr, nullptr, &r);
        if (!wait(c, r)) failed = true;
      }
      if (failed) break;
    }
    double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    if (rank == 0) lat_us[row] = us / n / 2;
    // Bandwidth: windows of sends, each answered by a one-byte ack.
    int rounds = n / 4 < 2 ? 2 : n / 4;
    std::vector<rdmx_request_t*> reqs(size_t(o.window));
    t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < rounds && !failed; ++k) {
      for (int w = 0; w < o.window; ++w) {
        if (rank == 0)
          rdmx_isend(c, peer, 0, 2, buf.data(), size, 0, nullptr, nullptr, &reqs[size_t(w)]);
        else
          rdmx_irecv(c, peer, 0, 2, buf.data(), size, nullptr, nullptr, &reqs[size_t(w)]);
      }
      for (auto* r : reqs)
        if (!wait(c, r)) failed = true;
      rdmx_request_t* r;
      if (rank == 0)
        rdmx_irecv(c, peer, 0, 3, ack.data(), 1, nullptr, nullptr, &r);
      else
        rdmx_isend(c, peer, 0, 3, ack.data(), 1, 0, nullptr, nullptr, &r);
      if (!wait(c, r)) failed = true;
    }
    double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rank == 0) bw_mbs[row] = double(size) * o.window * rounds / sec / 1e6;
  }
}

void rank_main(int rank, const Options& o, Shared& s, double* lat_us, double* bw_mbs) {
  rdmx_init_params_t p{rank, 2, o.fabric.empty() ? nullptr : o.fabric.c_str(), 7, nullptr};
  rdmx_context_t* c = nullptr;
  if (rdmx_init(&p, &c) != RDMX_OK) {
    s.failed = true;
    return;
  }
  size_t len = 0;
  rdmx_address(c, nullptr, &len);
  s.addr[rank].resize(len);
  rdmx_address(c, s.addr[rank].data(), &len);
  s.ready.fetch_add(1);
  spin_until(s, 2, c);
  if (!s.failed) {
    rdmx_add_peer(c, 1 - rank, s.addr[1 - rank].data(), s.addr[1 - rank].size());
    measure(c, rank, o, s.failed, lat_us, bw_mbs);
  }
  s.ready.fetch_add(1);
  spin_until(s, 4, c);
  if (rank == 0) std::printf("fabric: %s\n", rdmx_fabric_name(c));
  rdmx_finalize(c);
}

void print_table(const Options& o, const std::vector<double>& lat, const std::vector<double>& bw) {
  std::printf("%12s %14s %16s\n", "bytes", "latency (us)", "bandwidth (MB/s)");
  int row = 0;
  for (uint64_t size = 1; size <= o.max_size && row < kRows; size *= 4, ++row)
    std::printf("%12llu %14.2f %16.1f\n", (unsigned long long)size, lat[size_t(row)],
                bw[size_t(row)]);
}

// One rank per process, started by rdmx_launch (or anything that sets RDMX_RANK,
// RDMX_SIZE and RDMX_BOOTSTRAP).
int bootstrap_main(const Options& o) {
  if (!o.fabric.empty()) ::setenv("RDMX_FABRIC", o.fabric.c_str(), 1);
  rdmx_context_t* c = nullptr;
  if (int rc = rdmx_init_bootstrap(&c)) {
    std::fprintf(stderr, "rdmx_pingpong: %s: %s\n", rdmx_strerror(rc), rdmx_last_error(nullptr));
    return 1;
  }
  const char* size = std::getenv("RDMX_SIZE");
  const char* rank_text = std::getenv("RDMX_RANK");
  int rank = rank_text ? std::atoi(rank_text) : 0;
  if (!size || std::string(size) != "2") {
    std::fprintf(stderr, "rdmx_pingpong: needs exactly 2 ranks, RDMX_SIZE=%s\n", size ? size : "");
    rdmx_finalize(c);
    return 2;
  }
  std::atomic<bool> failed{false};
  std::vector<double> lat(kRows), bw(kRows);
  measure(c, rank, o, failed, lat.data(), bw.data());
  if (rank == 0 && !failed) {
    std::printf("fabric: %s (one rank per process, standalone bootstrap)\n", rdmx_fabric_name(c));
    print_table(o, lat, bw);
  }
  rdmx_finalize(c);
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) return 2;
  if (std::getenv("RDMX_RANK")) return bootstrap_main(o);
  Shared s;
  std::vector<double> lat(kRows), bw(kRows);
  std::thread t1(rank_main, 1, std::cref(o), std::ref(s), lat.data(), bw.data());
  rank_main(0, o, s, lat.data(), bw.data());
  t1.join();
  if (s.failed) {
    std::fprintf(stderr, "rdmx_pingpong: failed (%s)\n", rdmx_last_error(nullptr));
    return 1;
  }
  print_table(o, lat, bw);
  return 0;
}
