// The input of the engine receive-path target (fuzz_engine_recv.cpp), read by the target
// and written by the seed writer (write_seeds.cpp), so that both agree on the layout:
//
//   setup: u8 variant (bit 0: RDMX_SRQ=1; bits 1-2: the context's eager limit, 0, 64,
//          256 or 1024; bit 3: RDMX_CREDITS 8 instead of 4; bit 4:
//          RDMX_LOOPBACK_SMALL_UNBUFFERED=1, messages of up to 164 bytes reach the context
//          without a receive buffer, as through shared memory), then rank 1's connect offer:
//          u16 credits, u8 control credits, u32 eager limit, u8 flags
//   then operations until the input ends, each a u8 (modulo kOps) and its operands:
//     RawSend    u8 fixes, u16 length, that many bytes: a SEND from rank 1
//     Recv       u8 source, u8 context id, u8 tag, u16 length: rdmx_irecv
//     Send       u8 how (bit 0: to itself, bit 1: synchronous), u8 context id, u8 tag,
//                u16 length: rdmx_isend
//     Progress   u8 rounds
//     Probe      u8 source, u8 context id, u8 tag: rdmx_improbe, then rdmx_imrecv
//     Cancel     rdmx_cancel on every request held
//     Test       rdmx_test on every request held, freeing those done
//     PeerLeaves rank 1 disconnects
//     Tagged     u8 source, u8 context id, u8 tag, u8 how (bits 0-1: the ignore mask,
//                kTaggedMasks; bit 2: a matched probe and its receive), u16 length:
//                rdmx_irecv_tagged (or rdmx_improbe_tagged) of (context id << 32 | tag)
//
// A SEND's fixes make fields right that the input would rarely guess: the sequence
// number, the source, the request a FIN or sync ack names, where a rendezvous request
// points and under which key, the eager length, the version.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "protocol/wire.h"
#include "rdmx/rdmx.h"

namespace rdmx::fuzz {

inline constexpr int kMaxOps = 64;
inline constexpr uint16_t kMaxRawSend = 2048;
inline constexpr uint64_t kMaxBuffer = 8192;

enum class Op : uint8_t { RawSend, Recv, Send, Progress, Probe, Cancel, Test, PeerLeaves, Tagged };
inline constexpr uint8_t kOps = 9;

// Exact, the tag's low byte, the context id, everything.
inline constexpr uint64_t kTaggedMasks[4] = {0, 0xff, ~0ull << 32, ~0ull};
inline constexpr uint8_t kTaggedProbe = 4;

struct Setup {
  int64_t srq = 0;
  int64_t eager_limit = 256;
  int64_t credits = 4;
  int64_t unbuffered = 0;
  uint16_t peer_credits = 16;
  uint8_t peer_ctrl_credits = 4;
  uint32_t peer_eager_limit = 256;
  uint8_t peer_flags = 1;  // protocol::kFlowControl, and kUnsealed
};
// In peer_flags: rank 1's offer goes without its MAC, as an outsider's would.
inline constexpr uint8_t kUnsealed = 0x80;

inline constexpr int64_t kEagerLimits[4] = {0, 64, 256, 1024};

inline Setup read_setup(Input& in) {
  Setup s;
  uint8_t v = in.u8();
  s.srq = v & 1;
  s.eager_limit = kEagerLimits[(v >> 1) & 3];
  s.credits = v & 8 ? 8 : 4;
  s.unbuffered = (v >> 4) & 1;
  s.peer_credits = in.u16();
  s.peer_ctrl_credits = in.u8();
  s.peer_eager_limit = in.u32();
  s.peer_flags = in.u8();
  return s;
}

enum Fix : uint8_t {
  kFixSeq = 1,       // the sequence number the context expects next
  kFixSource = 2,    // source rank 1 (not in a Short message)
  kFixRef = 4,       // bytes 32..39: the request of the context's last RTS or sync send
  kFixRts = 8,       // bytes 32..47: an address inside rank 1's readable memory, its key
  kFixKey = 16,      // bytes 40..47: that key only (the address stays the input's)
  kFixLength = 32,   // the length field: the eager payload that follows (not in a Short one)
  kFixVersion = 64,  // the protocol version
};

// What the fixes put in: rank 1's state when it sends.
struct Patch {
  uint32_t seq;
  uint64_t sender_request;
  uint64_t readable;  // address of rank 1's memory open to READs
  uint64_t readable_len;
  uint64_t key;
};

inline void put(std::vector<uint8_t>& m, size_t at, const void* v, size_t n) {
  if (m.size() >= at + n) std::memcpy(m.data() + at, v, n);
}

inline void apply_fixes(std::vector<uint8_t>& m, uint8_t fix, const Patch& p) {
  constexpr size_t kHeader = sizeof(wire::Header);
  // A Short message has only the header's first 16 bytes: the fields beyond are payload.
  bool is_short =
      !m.empty() && (m[offsetof(wire::Header, version_type)] & 0x0f) == uint8_t(wire::Type::Short);
  if (fix & kFixSeq) put(m, offsetof(wire::Header, seq), &p.seq, 4);
  if (fix & kFixSource && !is_short) {
    int32_t one = 1;
    put(m, offsetof(wire::Header, source), &one, 4);
  }
  if (fix & kFixVersion && m.size() > offsetof(wire::Header, version_type)) {
    uint8_t& vt = m[offsetof(wire::Header, version_type)];
    vt = uint8_t(wire::kVersion << 4 | (vt & 0x0f));
  }
  if (fix & kFixRef) put(m, kHeader, &p.sender_request, 8);
  if (fix & kFixRts && m.size() >= kHeader + 8) {
    uint64_t a;
    std::memcpy(&a, m.data() + kHeader, 8);
    a = p.readable + a % p.readable_len;
    put(m, kHeader, &a, 8);
  }
  if (fix & (kFixRts | kFixKey)) put(m, kHeader + 8, &p.key, 8);
  if (fix & kFixLength && m.size() >= kHeader && !is_short) {
    bool sync = m[offsetof(wire::Header, flags)] & wire::kSync;
    uint64_t payload = m.size() - kHeader;
    if (sync) payload = payload >= 8 ? payload - 8 : 0;
    put(m, offsetof(wire::Header, length), &payload, 8);
  }
}

inline int32_t pick_source(uint8_t b) {
  switch (b % 4) {
    case 0: return RDMX_ANY_SOURCE;
    case 2: return 0;
    default: return 1;
  }
}

// Tags -2..4, and RDMX_ANY_TAG.
inline int32_t pick_tag(uint8_t b) { return b % 8 == 7 ? RDMX_ANY_TAG : int32_t(b % 8) - 2; }

// Writes programs in the layout above (the seed writer's side).
class ProgramWriter {
 public:
  explicit ProgramWriter(const Setup& s) {
    uint8_t v =
        uint8_t(s.srq & 1) | uint8_t(s.credits == 8 ? 8 : 0) | uint8_t((s.unbuffered & 1) << 4);
    for (uint8_t i = 0; i < 4; ++i)
      if (kEagerLimits[i] == s.eager_limit) v |= uint8_t(i << 1);
    u8(v);
    u16(s.peer_credits);
    u8(s.peer_ctrl_credits);
    u32(s.peer_eager_limit);
    u8(s.peer_flags);
  }
  ProgramWriter& raw_send(uint8_t fixes, const std::vector<uint8_t>& msg) {
    op(Op::RawSend);
    u8(fixes);
    u16(uint16_t(msg.size()));
    bytes_.insert(bytes_.end(), msg.begin(), msg.end());
    return *this;
  }
  // source, cid and tag are the input's bytes (pick_source, pick_tag).
  ProgramWriter& recv(uint8_t source, uint8_t cid, uint8_t tag, uint16_t len) {
    op(Op::Recv);
    u8(source);
    u8(cid);
    u8(tag);
    u16(len);
    return *this;
  }
  ProgramWriter& send(uint8_t how, uint8_t cid, uint8_t tag, uint16_t len) {
    op(Op::Send);
    u8(how);
    u8(cid);
    u8(tag);
    u16(len);
    return *this;
  }
  ProgramWriter& progress(uint8_t rounds) {
    op(Op::Progress);
    u8(rounds);
    return *this;
  }
  ProgramWriter& probe(uint8_t source, uint8_t cid, uint8_t tag) {
    op(Op::Probe);
    u8(source);
    u8(cid);
    u8(tag);
    return *this;
  }
  ProgramWriter& tagged(uint8_t source, uint8_t cid, uint8_t tag, uint8_t how, uint16_t len) {
    op(Op::Tagged);
    u8(source);
    u8(cid);
    u8(tag);
    u8(how);
    u16(len);
    return *this;
  }
  ProgramWriter& simple(Op o) {
    op(o);
    return *this;
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  void op(Op o) { u8(uint8_t(o)); }
  void u8(uint8_t v) { bytes_.push_back(v); }
  void u16(uint16_t v) { add(&v, 2); }
  void u32(uint32_t v) { add(&v, 4); }
  void add(const void* v, size_t n) {
    auto* b = static_cast<const uint8_t*>(v);
    bytes_.insert(bytes_.end(), b, b + n);
  }
  std::vector<uint8_t> bytes_;
};

}  // namespace rdmx::fuzz
