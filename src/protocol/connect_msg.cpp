#include "protocol/connect_msg.h"

#include <sys/random.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>

namespace rdmx::protocol {

const char* reject_reason_text(RejectReason r) {
  switch (r) {
    case RejectReason::None: return "no reason given";
    case RejectReason::Foreign: return "the request was not from rdmx (foreign private data)";
    case RejectReason::Version: return "unsupported rdmx protocol version";
    case RejectReason::Corrupt: return "corrupt connection private data";
    case RejectReason::WrongJob:
      return "the request did not prove membership of this job (another job, or another job "
             "secret)";
    case RejectReason::WrongRank: return "the request was addressed to another rank";
    case RejectReason::UnknownRank: return "the source rank is not part of this job";
    case RejectReason::Duplicate:
      return "simultaneous connect: the lower rank's connection is kept";
    case RejectReason::Shutdown: return "the peer is shutting down";
    case RejectReason::Resources: return "the peer ran out of resources for a new connection";
    case RejectReason::Replayed: return "the request was a replay of one already seen";
    case RejectReason::NotReady:
      return "the peer has not been given the job secret (it waited for it too long)";
    case RejectReason::Stale:
      return "the request was made before the connection it would replace was closed";
  }
  return "unknown reject reason";
}

CmMessage make_cm(CmKind kind, int32_t src, int32_t dst) {
  CmMessage m{};
  m.magic = kCmMagic;
  m.version = kCmVersion;
  m.kind = kind;
  m.length = sizeof(CmMessage);
  m.src_rank = src;
  m.dst_rank = dst;
  return m;
}

SipKey job_key_mac_key(uint64_t job_key) { return {job_key, 0x4b424f4a584d4452ull}; }

SipKey secret_mac_key(const uint8_t* secret, size_t len) {
  // The first 16 bytes are the key; longer secrets are folded in.
  SipKey k{};
  std::memcpy(&k.k0, secret, 8);
  std::memcpy(&k.k1, secret + 8, 8);
  if (len > 16) {
    SipKey fold = k;
    k.k0 ^= siphash64(fold, secret + 16, len - 16);
  }
  return k;
}

void fresh_nonce(CmMessage& m) {
  if (::getrandom(m.nonce, sizeof m.nonce, 0) != ssize_t(sizeof m.nonce)) {
    // No system randomness: still unique per request within this process.
    static std::atomic<uint64_t> counter{0};
    uint64_t v = counter.fetch_add(1) ^ uint64_t(::getpid()) << 40 ^
                 uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
    std::memcpy(m.nonce, &v, sizeof v);
  }
}

namespace {
void compute_mac(const CmMessage& m, const SipKey& key, const uint8_t* bound,
                 uint8_t out[kMacBytes]) {
  uint8_t input[sizeof(CmMessage) + kNonceBytes];
  CmMessage copy = m;
  std::memset(copy.mac, 0, sizeof copy.mac);
  std::memcpy(input, &copy, sizeof copy);
  size_t n = sizeof copy;
  if (bound) {
    std::memcpy(input + n, bound, kNonceBytes);
    n += kNonceBytes;
  }
  uint8_t full[16];
  siphash128(key, input, n, full);
  std::memcpy(out, full, kMacBytes);
}
}  // namespace

void seal(CmMessage& m, const SipKey& key, const uint8_t* bound) {
  compute_mac(m, key, bound, m.mac);
}

bool verify(const CmMessage& m, const SipKey& key, const uint8_t* bound) {
  uint8_t want[kMacBytes];
  compute_mac(m, key, bound, want);
  return equal_in_constant_time(want, m.mac, kMacBytes);
}

RejectReason parse_cm(const void* data, size_t len, CmKind expect, CmMessage& out,
                      std::string& why) {
  out = CmMessage{};
  if (!data || len < 8) {
    why = "private data of " + std::to_string(len) + " bytes is too short for an rdmx header";
    return RejectReason::Foreign;
  }
  uint32_t magic;
  std::memcpy(&magic, data, sizeof magic);
  if (magic != kCmMagic) {
    why = "private data does not start with the rdmx magic";
    return RejectReason::Foreign;
  }
  auto* b = static_cast<const uint8_t*>(data);
  if (b[4] != kCmVersion) {
    why = "rdmx protocol version " + std::to_string(b[4]) + " (this side speaks " +
          std::to_string(kCmVersion) + ")";
    return RejectReason::Version;
  }
  uint8_t length = b[6];
  if (length != sizeof(CmMessage) || len < length) {
    why = "private data claims " + std::to_string(length) + " bytes, " + std::to_string(len) +
          " arrived, expected " + std::to_string(sizeof(CmMessage));
    return RejectReason::Corrupt;
  }
  std::memcpy(&out, data, sizeof out);
  if (out.kind != expect) {
    why = "message kind " + std::to_string(int(out.kind)) + " where " +
          std::to_string(int(expect)) + " was expected";
    return RejectReason::Corrupt;
  }
  if (expect != CmKind::Reject && (out.credits < 2 || out.ctrl_credits < 1)) {
    why = "the peer offers " + std::to_string(out.credits) + " credits and " +
          std::to_string(out.ctrl_credits) + " control credits (at least 2 and 1 are needed)";
    return RejectReason::Corrupt;
  }
  return RejectReason::None;
}

}  // namespace rdmx::protocol
