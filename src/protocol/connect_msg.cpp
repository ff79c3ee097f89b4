#include "protocol/connect_msg.h"

#include <cstring>

namespace rdmx::protocol {

const char* reject_reason_text(RejectReason r) {
  switch (r) {
    case RejectReason::None: return "no reason given";
    case RejectReason::Foreign: return "the request was not from rdmx (foreign private data)";
    case RejectReason::Version: return "unsupported rdmx protocol version";
    case RejectReason::Corrupt: return "corrupt connection private data";
    case RejectReason::WrongJob: return "the peer belongs to another job (job key mismatch)";
    case RejectReason::WrongRank: return "the request was addressed to another rank";
    case RejectReason::UnknownRank: return "the source rank is not part of this job";
    case RejectReason::Duplicate:
      return "simultaneous connect: the lower rank's connection is kept";
    case RejectReason::Shutdown: return "the peer is shutting down";
    case RejectReason::Resources: return "the peer ran out of resources for a new connection";
  }
  return "unknown reject reason";
}

CmMessage make_cm(CmKind kind, uint64_t job_key, int32_t src, int32_t dst) {
  CmMessage m{};
  m.magic = kCmMagic;
  m.version = kCmVersion;
  m.kind = kind;
  m.length = sizeof(CmMessage);
  m.job_key = job_key;
  m.src_rank = src;
  m.dst_rank = dst;
  return m;
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
  uint16_t length;
  std::memcpy(&length, b + 6, sizeof length);
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
  for (uint8_t r : out.reserved)
    if (r) {
      why = "reserved bytes are not zero";
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
