// The private data rdmx puts in connection requests, accepts and rejects: 47 bytes. It
// fits the smallest limit it meets (libfabric verbs: 55 bytes on connect, of which the
// libfabric backend's own header takes 8; rdma_cm: 56), carries its own length and
// version, and is validated field by field on receipt: the reported length may be
// larger than what was sent (rdma_cm zero-pads it).
//
// A request and an accept prove that their sender belongs to the job: a 64-bit MAC
// (SipHash-2-4-128 truncated; a forgery takes about 2^63 connection attempts) over the
// whole message, keyed by the job's secret or, in a job without one, by its job key (a
// label: anyone who knows it can join). A request carries a fresh nonce, so that a
// recorded one is recognised when replayed; an accept's MAC also covers the request's
// nonce, binding the answer to the question. Rejects carry no MAC and nothing secret.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/siphash.h"

namespace rdmx::protocol {

enum class CmKind : uint8_t { Connect = 1, Accept = 2, Reject = 3 };

enum class RejectReason : uint8_t {
  None = 0,
  Foreign = 1,      // not rdmx private data (bad magic)
  Version = 2,      // an rdmx version this side does not speak
  Corrupt = 3,      // a length or field that cannot be right
  WrongJob = 4,     // the job key differs: a process of another job
  WrongRank = 5,    // addressed to another rank
  UnknownRank = 6,  // the source rank is outside this job
  Duplicate = 7,    // simultaneous connect: the lower rank's attempt is kept
  Shutdown = 8,     // this side is finalizing or has lost that peer
  Resources = 9,    // this side could not set up the connection
  Replayed = 10,    // a request this side has seen before
  NotReady = 11,    // this side has no job secret yet and waited too long for it
  Stale = 12,       // made before a connection it would replace was closed (engine_close.h)
};
const char* reject_reason_text(RejectReason r);

inline constexpr size_t kMacBytes = 8;
inline constexpr size_t kNonceBytes = 8;

// Packed: the fields are read and written by value only (never by reference), and
// without padding the message fits the tightest limit (kConnectDataLimit).
struct [[gnu::packed]] CmMessage {
  uint32_t magic;
  uint8_t version;
  CmKind kind;
  uint8_t length;              // bytes of this message as sent
  RejectReason reason;         // Reject only
  uint8_t nonce[kNonceBytes];  // Connect: fresh per request; Accept: fresh too
  int32_t src_rank;
  int32_t dst_rank;
  uint32_t qp_num;       // the sender's queue pair (cross-checked by backends that have one)
  uint32_t eager_limit;  // the sender's eager limit
  uint16_t credits;      // regular receive buffers the sender posted for this connection
  uint8_t ctrl_credits;  // receive buffers reserved for credit messages
  uint8_t flags;         // kFlowControl
  uint16_t midsize_kib;  // the sender's mid-size limit in KiB (0: it sends none)
  // Connect: the connections with the destination the sender has closed by agreement
  // (mod 256) when it made the request: tells a request made after a close from one made
  // before it (engine_close.h).
  uint8_t epoch;
  uint8_t mac[kMacBytes];  // Connect and Accept: see above; zero in a Reject
};
static_assert(std::is_trivially_copyable_v<CmMessage>);

inline constexpr uint32_t kCmMagic = 0x584d4452;  // "RDMX"
inline constexpr uint8_t kCmVersion = 4;
inline constexpr uint8_t kFlowControl = 0x1;
// The sender receives from a shared pool: its credits are permission, not buffers of
// the connection's own. Informational: the receiver counts both kinds alike.
inline constexpr uint8_t kSharedReceive = 0x2;
// The tightest connect limit among the backends: libfabric verbs' 55 bytes, less the
// libfabric backend's 8-byte header.
inline constexpr size_t kConnectDataLimit = 47;
static_assert(sizeof(CmMessage) <= kConnectDataLimit,
              "the rdmx connect message must fit every backend's connect private data");

CmMessage make_cm(CmKind kind, int32_t src, int32_t dst);

// The MAC key of a job that has no secret: derived from its job key, which is no secret.
SipKey job_key_mac_key(uint64_t job_key);
// A MAC key from a job secret of at least 16 bytes.
SipKey secret_mac_key(const uint8_t* secret, size_t len);
// Fills m's nonce from the system's random source.
void fresh_nonce(CmMessage& m);
// Sets m.mac for key; an accept passes the request's nonce as bound (else null).
void seal(CmMessage& m, const SipKey& key, const uint8_t* bound);
// Whether m.mac is right for key (and bound).
bool verify(const CmMessage& m, const SipKey& key, const uint8_t* bound);

// Parses and validates bytes as a CmMessage of the given kind. On failure returns the
// reason to reject with and fills why with words naming what was wrong.
RejectReason parse_cm(const void* data, size_t len, CmKind expect, CmMessage& out,
                      std::string& why);

}  // namespace rdmx::protocol
