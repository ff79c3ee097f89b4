// How ranks prove to each other in the standalone bootstrap that they know the job
// secret, without sending it: rank 0 challenges each connection with fresh random
// bytes; the joiner answers with a MAC over the challenge, its rank and the job size
// (and a nonce of its own); rank 0 proves itself back with a MAC over the same
// challenge and the job key it hands out. A recorded answer is worth nothing for any
// other connection, whose challenge differs.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/siphash.h"

namespace rdmx::bootstrap {

inline constexpr size_t kChallengeBytes = 16;
inline constexpr size_t kProofBytes = 8 + 16;  // the joiner's nonce, then its MAC
inline constexpr size_t kRootProofBytes = 16;  // rank 0's MAC

// Fresh random bytes for a challenge (false without system randomness).
bool fresh_challenge(uint8_t out[kChallengeBytes]);
void prove_join(const SipKey& key, const uint8_t challenge[kChallengeBytes], int32_t rank,
                int32_t size, uint8_t out[kProofBytes]);
bool check_join(const SipKey& key, const uint8_t challenge[kChallengeBytes], int32_t rank,
                int32_t size, const uint8_t proof[kProofBytes]);
void prove_root(const SipKey& key, const uint8_t challenge[kChallengeBytes], uint64_t job_key,
                uint8_t out[kRootProofBytes]);
bool check_root(const SipKey& key, const uint8_t challenge[kChallengeBytes], uint64_t job_key,
                const uint8_t proof[kRootProofBytes]);

}  // namespace rdmx::bootstrap
