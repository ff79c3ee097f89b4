// rdmx_pingpong: two ranks exchange messages through rdmx and print a short latency and
// bandwidth table (means; rdmx_perf has percentiles, more tests and CSV). Without
// RDMX_RANK both ranks run in this process (one thread each, each with its own context
// and endpoint), so it needs no launcher; with RDMX_RANK set (rdmx_launch -n 2 --
// rdmx_pingpong) or under a PMIx launcher (mpirun, srun --mpi=pmix) it is one rank of a
// job started by rdmx_init_bootstrap, and a job of more ranks runs in pairs (0 with 1,
// 2 with 3, ...; rank 0 prints its pair's table). The fabric is RDMX_FABRIC's or
// --fabric's choice, and the data really crosses it.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tools/perf_loops.h"
#include "tools/perf_report.h"
#include "tools/two_ranks.h"

namespace {

using rdmx::tools::Test;

struct Options {
  std::string fabric;
  uint64_t max_size = 4 << 20;
  int iters = 1000;
  int window = 16;
};

void usage() {
  std::fprintf(stderr,
               "usage: rdmx_pingpong [--fabric auto|loopback|verbs|ofi|shm] [--max-size BYTES] "
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

int iters_for(uint64_t size, int base) {
  int n = base;
  if (size >= 65536) n = base / 10;
  if (size >= 1 << 20) n = base / 50;
  return n < 4 ? 4 : n;
}

bool body(const Options& o, const rdmx::tools::RankEnv& env) {
  std::vector<uint8_t> buf(2 * o.max_size);
  std::vector<double> samples;
  std::string error;
  if (env.rank == 0) {
    std::printf("fabric: %s\n", rdmx::tools::describe(env).c_str());
    std::printf("%12s %14s %16s\n", "bytes", "latency (us)", "bandwidth (MB/s)");
  }
  for (uint64_t size = 1; size <= o.max_size; size *= 4) {
    rdmx::tools::Step s;
    s.size = size;
    s.iters = iters_for(size, o.iters);
    s.warmup = 2;
    s.window = 1;
    if (!rdmx::tools::run_step(env, Test::kLatency, s, buf.data(), samples, error)) break;
    double lat = rdmx::tools::summarize(Test::kLatency, s, samples).mean;
    s.iters = s.iters / 4 < 2 ? 2 : s.iters / 4;
    s.warmup = 1;
    s.window = o.window;
    if (!rdmx::tools::run_step(env, Test::kBandwidth, s, buf.data(), samples, error)) break;
    double bw = rdmx::tools::summarize(Test::kBandwidth, s, samples).mb_s;
    if (env.rank == 0) std::printf("%12llu %14.2f %16.1f\n", (unsigned long long)size, lat, bw);
  }
  if (!error.empty()) {
    std::fprintf(stderr, "rdmx_pingpong: %s\n", error.c_str());
    return false;
  }
  return rdmx::tools::meet(env, 30000, error);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) return 2;
  bool ok = rdmx::tools::run_two_ranks(
      "rdmx_pingpong", o.fabric, [&](const rdmx::tools::RankEnv& env) { return body(o, env); });
  if (!ok) {
    std::fprintf(stderr, "rdmx_pingpong: failed\n");
    return 1;
  }
  return 0;
}
