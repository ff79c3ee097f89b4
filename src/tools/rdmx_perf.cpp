// rdmx_perf: latency, bandwidth (one way and both ways) and message rate between two
// ranks over rdmx, without MPI, for a sweep of message sizes; a table per test with the
// mean and percentiles of the per-iteration (latency) or per-window (the others) times,
// or CSV. Both ranks run in this process by default; under rdmx_launch -n 2 each is a
// process (two_ranks.h).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tools/perf_loops.h"
#include "tools/perf_report.h"
#include "tools/two_ranks.h"

namespace {

using rdmx::tools::Step;
using rdmx::tools::Test;

struct Options {
  std::vector<Test> tests{Test::kLatency, Test::kBandwidth, Test::kBidirectional,
                          Test::kMessageRate};
  std::string fabric;
  long long iters = 1000, warmup = -1, window = 64, timeout_ms = 30000;
  long long min_size = 1, max_size = 4 << 20;
  bool csv = false;
};

// Each step moves at most this many bytes one way (timed and warm-up together), so
// large sizes take fewer iterations; never fewer than kMinIters.
constexpr double kStepBytes = 1024.0 * 1024 * 1024;
constexpr long long kMinIters = 10;

const char* kUsage =
    "usage: rdmx_perf [--test lat,bw,bibw,mr|all] [--fabric auto|loopback|verbs|ofi|shm]\n"
    "                 [--iters N] [--warmup N] [--window N] [--min-size BYTES]\n"
    "                 [--max-size BYTES] [--timeout-ms MS] [--csv]\n"
    "  lat: ping-pong, half a round trip; bw: windows of non-blocking sends from rank 0,\n"
    "  each acknowledged; bibw: both ranks send a window at once; mr: bw's loop counted\n"
    "  in messages per second. Sizes double from --min-size to --max-size. --iters\n"
    "  iterations (lat) or windows (the others) per size, fewer from the size where a\n"
    "  size would move more than 1 GiB, never fewer than 10; --warmup (default iters/10)\n"
    "  before them, untimed. Both ranks run in this process, or one per process under\n"
    "  rdmx_launch -n 2 -- rdmx_perf ...\n";

bool number(const char* opt, const char* v, long long lo, long long hi, long long& out) {
  char* end = nullptr;
  errno = 0;
  long long x = std::strtoll(v, &end, 10);
  if (errno || !*v || *end || x < lo || x > hi) {
    std::fprintf(stderr, "rdmx_perf: %s '%s': expected a whole number from %lld to %lld\n", opt, v,
                 lo, hi);
    return false;
  }
  out = x;
  return true;
}

bool parse_tests(const char* v, std::vector<Test>& out) {
  out.clear();
  std::string list = v;
  if (list == "all") list = "lat,bw,bibw,mr";
  size_t at = 0;
  while (at <= list.size()) {
    size_t comma = list.find(',', at);
    std::string name = list.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    bool found = false;
    for (Test t : {Test::kLatency, Test::kBandwidth, Test::kBidirectional, Test::kMessageRate})
      if (name == rdmx::tools::test_name(t)) out.push_back(t), found = true;
    if (!found) {
      std::fprintf(stderr, "rdmx_perf: --test: unknown test '%s' (lat, bw, bibw, mr or all)\n",
                   name.c_str());
      return false;
    }
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return true;
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--csv") {
      o.csv = true;
      continue;
    }
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "rdmx_perf: %s\n%s",
                   a.rfind("--", 0) == 0 ? "an option without its value" : "unknown argument",
                   kUsage);
      return false;
    }
    const char* v = argv[++i];
    bool ok = true;
    if (a == "--test")
      ok = parse_tests(v, o.tests);
    else if (a == "--fabric")
      o.fabric = v;
    else if (a == "--iters")
      ok = number("--iters", v, 1, 100000000, o.iters);
    else if (a == "--warmup")
      ok = number("--warmup", v, 0, 100000000, o.warmup);
    else if (a == "--window")
      ok = number("--window", v, 1, 4096, o.window);
    else if (a == "--min-size")
      ok = number("--min-size", v, 0, 1LL << 30, o.min_size);
    else if (a == "--max-size")
      ok = number("--max-size", v, 0, 1LL << 30, o.max_size);
    else if (a == "--timeout-ms")
      ok = number("--timeout-ms", v, 100, 3600000, o.timeout_ms);
    else {
      std::fprintf(stderr, "rdmx_perf: unknown option '%s'\n%s", a.c_str(), kUsage);
      return false;
    }
    if (!ok) return false;
  }
  if (o.min_size > o.max_size) {
    std::fprintf(stderr, "rdmx_perf: --min-size %lld is above --max-size %lld\n", o.min_size,
                 o.max_size);
    return false;
  }
  return true;
}

std::vector<uint64_t> sizes(const Options& o) {
  std::vector<uint64_t> out;
  if (o.min_size == 0) out.push_back(0);
  for (uint64_t s = o.min_size ? uint64_t(o.min_size) : 1; s <= uint64_t(o.max_size); s *= 2)
    out.push_back(s);
  return out;
}

Step step_for(const Options& o, Test t, uint64_t size) {
  Step s;
  s.size = size;
  s.window = t == Test::kLatency ? 1 : int(o.window);
  s.timeout_ms = int(o.timeout_ms);
  double per_iter = double(size ? size : 1) * s.window;
  long long iters = o.iters, warmup = o.warmup >= 0 ? o.warmup : o.iters / 10;
  if (double(iters + warmup) * per_iter > kStepBytes) {
    double scale = kStepBytes / (double(iters + warmup) * per_iter);
    iters = std::max(kMinIters, (long long)(double(iters) * scale));
    warmup = std::min(warmup, std::max(2LL, (long long)(double(warmup) * scale)));
  }
  s.iters = int(std::min(iters, o.iters));
  s.warmup = int(warmup);
  return s;
}

bool body(const Options& o, const rdmx::tools::RankEnv& env) {
  size_t bytes = size_t(o.max_size ? o.max_size : 1);
  std::unique_ptr<uint8_t, decltype(&std::free)> buf(
      static_cast<uint8_t*>(std::aligned_alloc(4096, (2 * bytes + 4095) / 4096 * 4096)),
      &std::free);
  if (!buf) {
    std::fprintf(stderr, "rdmx_perf: rank %d: cannot allocate 2 x %zu bytes\n", env.rank, bytes);
    env.failed->store(true);
    return false;
  }
  std::memset(buf.get(), 0x5a, 2 * bytes);
  std::string fabric = rdmx::tools::fabric_path(env), error;
  bool print = env.rank == 0;
  if (print && o.csv) rdmx::tools::print_csv_heading(stdout);
  std::vector<double> samples;
  for (Test t : o.tests) {
    auto list = sizes(o);
    if (print && !o.csv) {
      std::printf("\n");
      rdmx::tools::print_table_heading(stdout, t, rdmx::tools::describe(env),
                                       step_for(o, t, list.front()));
    }
    for (uint64_t size : list) {
      Step s = step_for(o, t, size);
      if (!rdmx::tools::meet(env, s.timeout_ms, error) ||
          !rdmx::tools::run_step(env, t, s, buf.get(), samples, error)) {
        std::fprintf(stderr, "rdmx_perf: %s\n", error.c_str());
        return false;
      }
      if (!print) continue;
      auto row = rdmx::tools::summarize(t, s, samples);
      if (o.csv)
        rdmx::tools::print_csv_row(stdout, fabric, row);
      else
        rdmx::tools::print_table_row(stdout, row);
    }
  }
  return rdmx::tools::meet(env, int(o.timeout_ms), error);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) return 2;
  bool ok = rdmx::tools::run_two_ranks(
      "rdmx_perf", o.fabric, [&](const rdmx::tools::RankEnv& env) { return body(o, env); });
  if (!ok) {
    std::fprintf(stderr, "rdmx_perf: failed\n");
    return 1;
  }
  return 0;
}
