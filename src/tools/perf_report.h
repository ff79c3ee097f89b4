// rdmx_perf's results: one row per test and size, summarised from the per-iteration (or
// per-window) times, printed as a table or as CSV.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "tools/perf_loops.h"

namespace rdmx::tools {

struct Row {
  Test test = Test::kLatency;
  uint64_t size = 0;
  int iters = 0;
  int window = 0;
  // Microseconds per sample (half a round trip, or a window): nearest-rank percentiles.
  double mean = 0, p50 = 0, p99 = 0, min = 0, max = 0;
  double mb_s = 0;    // windowed tests: bytes moved over the whole timed run (both ways)
  double mmsg_s = 0;  // windowed tests: messages per microsecond, = millions per second
};

// Summarises samples (microseconds) of one test at one size.
Row summarize(Test test, const Step& step, std::vector<double> samples);

void print_table_heading(std::FILE* out, Test test, const std::string& how, const Step& first);
void print_table_row(std::FILE* out, const Row& r);
void print_csv_heading(std::FILE* out);
void print_csv_row(std::FILE* out, const std::string& fabric, const Row& r);

}  // namespace rdmx::tools
