// A job without MPI, started by any launcher rdmx_init_bootstrap understands (mpirun or
// srun through PMIx, rdmx_launch through sockets): every rank sends every other rank a
// small and a rendezvous-sized message whose bytes name sender and receiver, receives
// theirs, and checks every byte. Rank 0 prints one line; any failure exits non-zero.
//   bootstrap_job [EXPECTED_SIZE]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "rdmx/rdmx.h"

namespace {

uint8_t byte_of(int32_t from, int32_t to, size_t i) { return uint8_t(from * 31 + to * 7 + i); }

int fail(rdmx_context_t* c, const std::string& what) {
  std::fprintf(stderr, "bootstrap_job: rank %d: %s: %s\n", c ? rdmx_context_rank(c) : -1,
               what.c_str(), rdmx_last_error(c));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  rdmx_context_t* c = nullptr;
  if (int rc = rdmx_init_bootstrap(&c)) {
    std::fprintf(stderr, "bootstrap_job: rdmx_init_bootstrap: %s: %s\n", rdmx_strerror(rc),
                 rdmx_last_error(nullptr));
    return 1;
  }
  int32_t rank = rdmx_context_rank(c), size = rdmx_context_size(c);
  if (argc > 1 && size != std::atoi(argv[1])) return fail(c, "a job of " + std::to_string(size));
  const size_t lens[] = {8, 256 * 1024};
  std::vector<std::vector<uint8_t>> out, in;
  std::vector<rdmx_request_t*> reqs;
  for (int32_t peer = 0; peer < size; ++peer) {
    for (size_t k = 0; k < 2; ++k) {
      out.emplace_back(lens[k]);
      for (size_t i = 0; i < lens[k]; ++i) out.back()[i] = byte_of(rank, peer, i);
      in.emplace_back(lens[k]);
      rdmx_request_t *s = nullptr, *r = nullptr;
      if (rdmx_irecv(c, peer, 0, int32_t(k), in.back().data(), lens[k], nullptr, nullptr, &r) ||
          rdmx_isend(c, peer, 0, int32_t(k), out.back().data(), lens[k], 0, nullptr, nullptr, &s))
        return fail(c, "posting to rank " + std::to_string(peer));
      reqs.push_back(r);
      reqs.push_back(s);
    }
  }
  for (rdmx_request_t* r : reqs) {
    rdmx_status_info_t st{};
    int rc = rdmx_wait(c, r, 60000, &st);
    if (rc || st.error)
      return fail(c, std::string("a transfer: ") + rdmx_strerror(rc ? rc : st.error));
    rdmx_request_free(c, r);
  }
  for (int32_t peer = 0; peer < size; ++peer)
    for (size_t k = 0; k < 2; ++k)
      for (size_t i = 0; i < lens[k]; ++i)
        if (in[size_t(peer) * 2 + k][i] != byte_of(peer, rank, i))
          return fail(c, "byte " + std::to_string(i) + " from rank " + std::to_string(peer));
  if (rank == 0)
    std::printf("bootstrap_job: %d ranks, fabric %s, every pair's messages verified\n", size,
                rdmx_fabric_name(c));
  rdmx_finalize(c);
  return 0;
}
