#include "tools/perf_report.h"

#include <algorithm>
#include <numeric>

namespace rdmx::tools {
namespace {

// The nearest-rank percentile of sorted samples: the smallest value with at least p% of
// the samples at or below it.
double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t rank = size_t(p / 100.0 * double(sorted.size()) + 0.999999);
  if (rank < 1) rank = 1;
  if (rank > sorted.size()) rank = sorted.size();
  return sorted[rank - 1];
}

}  // namespace

Row summarize(Test test, const Step& step, std::vector<double> samples) {
  Row r;
  r.test = test;
  r.size = step.size;
  r.iters = int(samples.size());
  r.window = test == Test::kLatency ? 1 : step.window;
  if (samples.empty()) return r;
  std::sort(samples.begin(), samples.end());
  double total = std::accumulate(samples.begin(), samples.end(), 0.0);
  r.mean = total / double(samples.size());
  r.p50 = percentile(samples, 50);
  r.p99 = percentile(samples, 99);
  r.min = samples.front();
  r.max = samples.back();
  if (test != Test::kLatency && total > 0) {
    double messages = double(samples.size()) * step.window;
    if (test == Test::kBidirectional) messages *= 2;
    r.mmsg_s = messages / total;
    r.mb_s = messages * double(step.size) / total;
  }
  return r;
}

void print_table_heading(std::FILE* out, Test test, const std::string& how, const Step& first) {
  const char* what = test == Test::kLatency         ? "latency: half a round trip per iteration"
                     : test == Test::kBandwidth     ? "bandwidth: rank 0 to rank 1, per window"
                     : test == Test::kBidirectional ? "bidirectional bandwidth, per window"
                                                    : "message rate: rank 0 to rank 1, per window";
  std::fprintf(out, "# %s (%s)\n# %s", test_name(test), what, how.c_str());
  if (test != Test::kLatency) std::fprintf(out, "; window %d", first.window);
  std::fprintf(out, "; warm-up excluded; times in us\n");
  if (test == Test::kMessageRate)
    std::fprintf(out, "%10s %7s %10s %10s %10s %10s %10s %10s\n", "bytes", "windows", "Mmsg/s",
                 "mean", "p50", "p99", "min", "MB/s");
  else if (test == Test::kLatency)
    std::fprintf(out, "%10s %7s %10s %10s %10s %10s %10s\n", "bytes", "iters", "mean", "p50", "p99",
                 "min", "max");
  else
    std::fprintf(out, "%10s %7s %10s %10s %10s %10s %10s %10s\n", "bytes", "windows", "mean", "p50",
                 "p99", "min", "max", "MB/s");
}

void print_table_row(std::FILE* out, const Row& r) {
  auto size = (unsigned long long)r.size;
  if (r.test == Test::kMessageRate)
    std::fprintf(out, "%10llu %7d %10.3f %10.2f %10.2f %10.2f %10.2f %10.1f\n", size, r.iters,
                 r.mmsg_s, r.mean, r.p50, r.p99, r.min, r.mb_s);
  else if (r.test == Test::kLatency)
    std::fprintf(out, "%10llu %7d %10.2f %10.2f %10.2f %10.2f %10.2f\n", size, r.iters, r.mean,
                 r.p50, r.p99, r.min, r.max);
  else
    std::fprintf(out, "%10llu %7d %10.2f %10.2f %10.2f %10.2f %10.2f %10.1f\n", size, r.iters,
                 r.mean, r.p50, r.p99, r.min, r.max, r.mb_s);
  std::fflush(out);
}

void print_csv_heading(std::FILE* out) {
  std::fprintf(out,
               "test,fabric,bytes,iters,window,mean_us,p50_us,p99_us,min_us,max_us,MB_s,"
               "Mmsg_s\n");
}

void print_csv_row(std::FILE* out, const std::string& fabric, const Row& r) {
  std::fprintf(out, "%s,\"%s\",%llu,%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.6g,%.6g\n", test_name(r.test),
               fabric.c_str(), (unsigned long long)r.size, r.iters, r.window, r.mean, r.p50, r.p99,
               r.min, r.max, r.mb_s, r.mmsg_s);
  std::fflush(out);
}

}  // namespace rdmx::tools
