// The rdmx wire format: every SEND starts with a Header (docs/wire-format.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace rdmx::wire {

inline constexpr uint8_t kVersion = 2;

enum class Type : uint8_t {
  Eager = 1,    // header [+ SyncTail] + payload
  Rts = 2,      // header + RtsBody: rendezvous request-to-send
  Fin = 3,      // header + ReqRef: the receiver finished reading; sender may complete
  SyncAck = 4,  // header + ReqRef: a synchronous eager send was matched
  Credit = 5,   // header only: explicit credit return
  Hello = 6,    // header only: the active side's first message on a connection
  Segment = 7,  // header + one piece of a mid-size message (engine_segment.h)
  Short = 8,    // short header + payload: an eager message without flags
  // Closing an idle connection by agreement (engine_close.h), header only:
  Close = 9,      // active side: close? length = the messages it has received on the link
  CloseAck = 10,  // passive side: agreed, this is its last message on the link
  CloseNak = 11,  // passive side: not now, something is still in flight
  CloseAsk = 12,  // passive side: please propose a close
  // header + ReqRef (1: on, 0: off): the receiver is over its bound on unexpected
  // messages; send what is larger than kThrottledEager by rendezvous until it says off.
  Rendezvous = 13,
};
inline constexpr Type kLastType = Type::Rendezvous;
// What still goes eagerly to a receiver that asked for rendezvous: no more than the
// record an unexpected rendezvous request costs it.
inline constexpr uint64_t kThrottledEager = 256;

enum Flags : uint8_t {
  kSync = 0x1,  // Eager: a SyncTail follows the header; the receiver acks on match
};

// 32 bytes, naturally aligned, little-endian (rdmx runs between same-endian hosts).
// Its first kShortBytes are the whole header of a Short message, an eager message
// without flags: its length is what follows the short header, its source the
// connection's peer. A small message then fits in half a cache line with its payload.
struct Header {
  uint8_t version_type;  // version << 4 | type
  uint8_t ctrl_credits;  // control (credit-message) buffers returned to the peer
  uint16_t credits;      // regular receive buffers returned to the peer
  uint32_t seq;          // per-connection message sequence number, from 0
  uint32_t context_id;   // MPI communicator context
  int32_t tag;
  // A Short message's header ends here.
  uint64_t length;  // full message length in bytes (Eager/Rts/Segment)
  int32_t source;   // sender's rank
  uint8_t flags;
  uint8_t reserved[3];

  Type type() const { return Type(version_type & 0x0f); }
  uint8_t version() const { return version_type >> 4; }
  static constexpr uint8_t make_vt(Type t) { return uint8_t(kVersion << 4 | uint8_t(t)); }
  // Version, type and flags together, to recognise a kind of message in one compare.
  uint16_t vt_flags() const { return uint16_t(version_type | flags << 8); }
};
static_assert(sizeof(Header) == 32 && std::is_trivially_copyable_v<Header>);
static_assert(offsetof(Header, version_type) == 0);

inline constexpr uint32_t kShortBytes = 16;

// A header field of type T at offset in the message b, read where it is.
template <class T>
inline T field(const uint8_t* b, size_t offset) {
  T v;
  std::memcpy(&v, b + offset, sizeof v);
  return v;
}

// The sequence number of a Short message whose fabric left it out: one that carries a
// connection's messages in order itself (fabric::ConnAttrs::unnumbered_shorts). The
// receiver takes such a message as the next.
inline constexpr uint32_t kUnnumbered = 0xffffffff;
static_assert(offsetof(Header, length) == kShortBytes);

// The bytes of h that go on the wire.
inline uint32_t header_bytes(const Header& h) {
  return h.type() == Type::Short ? kShortBytes : uint32_t(sizeof h);
}

struct ReqRef {
  uint64_t sender_request;  // opaque to the receiver, echoed back
};

struct RtsBody {
  uint64_t address;  // where to read from (backend-specific: VA or offset)
  uint64_t key;      // remote key
  uint64_t sender_request;
};

inline constexpr uint32_t kMaxControlBytes = sizeof(Header) + sizeof(RtsBody);

}  // namespace rdmx::wire
