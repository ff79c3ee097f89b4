#include "topology/local_rank.h"

#include <cstdlib>

namespace rdmx::topology {
namespace {

// A plain decimal number below 2^20; false for anything else (a launcher's variable
// that is not a local rank is ignored rather than misread).
bool parse(const char* v, unsigned& out) {
  if (!v || !*v) return false;
  unsigned n = 0;
  for (const char* p = v; *p; ++p) {
    if (*p < '0' || *p > '9' || n >= (1u << 20) / 10) return false;
    n = n * 10 + unsigned(*p - '0');
  }
  out = n;
  return true;
}

}  // namespace

LocalRank local_rank(int64_t setting) {
  if (setting >= 0) return {unsigned(setting), "RDMX_LOCAL_RANK"};
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "PMIX_LOCAL_RANK"}) {
    unsigned v = 0;
    if (parse(std::getenv(name), v)) return {v, name};
  }
  return {0, "none set"};
}

}  // namespace rdmx::topology
