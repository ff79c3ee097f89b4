#include "bootstrap/bootstrap_proof.h"

#include <sys/random.h>

#include <cstring>

namespace rdmx::bootstrap {
namespace {

// What is MACed: a label that keeps the two kinds of proof apart, the challenge, and
// the fields that follow.
struct JoinInput {
  char label[8] = {'r', 'd', 'm', 'x', 'j', 'o', 'i', 'n'};
  uint8_t challenge[kChallengeBytes];
  uint8_t nonce[8];
  int32_t rank;
  int32_t size;
};

struct RootInput {
  char label[8] = {'r', 'd', 'm', 'x', 'r', 'o', 'o', 't'};
  uint8_t challenge[kChallengeBytes];
  uint64_t job_key;
};

void join_mac(const SipKey& key, const uint8_t* challenge, const uint8_t* nonce, int32_t rank,
              int32_t size, uint8_t out[16]) {
  JoinInput in;
  std::memcpy(in.challenge, challenge, kChallengeBytes);
  std::memcpy(in.nonce, nonce, sizeof in.nonce);
  in.rank = rank;
  in.size = size;
  siphash128(key, &in, sizeof in, out);
}

}  // namespace

bool fresh_challenge(uint8_t out[kChallengeBytes]) {
  return ::getrandom(out, kChallengeBytes, 0) == ssize_t(kChallengeBytes);
}

void prove_join(const SipKey& key, const uint8_t challenge[kChallengeBytes], int32_t rank,
                int32_t size, uint8_t out[kProofBytes]) {
  if (::getrandom(out, 8, 0) != 8) std::memset(out, 0, 8);  // the challenge is what must be fresh
  join_mac(key, challenge, out, rank, size, out + 8);
}

bool check_join(const SipKey& key, const uint8_t challenge[kChallengeBytes], int32_t rank,
                int32_t size, const uint8_t proof[kProofBytes]) {
  uint8_t want[16];
  join_mac(key, challenge, proof, rank, size, want);
  return equal_in_constant_time(want, proof + 8, sizeof want);
}

void prove_root(const SipKey& key, const uint8_t challenge[kChallengeBytes], uint64_t job_key,
                uint8_t out[kRootProofBytes]) {
  RootInput in;
  std::memcpy(in.challenge, challenge, kChallengeBytes);
  in.job_key = job_key;
  siphash128(key, &in, sizeof in, out);
}

bool check_root(const SipKey& key, const uint8_t challenge[kChallengeBytes], uint64_t job_key,
                const uint8_t proof[kRootProofBytes]) {
  uint8_t want[kRootProofBytes];
  prove_root(key, challenge, job_key, want);
  return equal_in_constant_time(want, proof, sizeof want);
}

}  // namespace rdmx::bootstrap
