// The connection private data parser (protocol/connect_msg.cpp): any bytes a stranger
// puts in a connect request, accept or reject, of any length.
//
// Input: one byte choosing the kind expected (connect, accept, reject), then the
// private data as it arrived.
#include <cstring>
#include <string>

#include "fuzz/fuzz_input.h"
#include "protocol/connect_msg.h"

using namespace rdmx::protocol;
using rdmx::SipKey;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rdmx::fuzz::Input in(data, size);
  auto expect = CmKind(in.u8() % 3 + 1);
  std::vector<uint8_t> pdata = in.rest();
  CmMessage m;
  std::string why;
  RejectReason r = parse_cm(pdata.empty() ? nullptr : pdata.data(), pdata.size(), expect, m, why);
  FUZZ_CHECK(std::strcmp(reject_reason_text(r), "unknown reject reason") != 0);
  if (r != RejectReason::None) {
    FUZZ_CHECK(!why.empty());
    return 0;
  }
  // Accepted: exactly the bytes that came, and every field the parser promises.
  FUZZ_CHECK(pdata.size() >= sizeof m && std::memcmp(&m, pdata.data(), sizeof m) == 0);
  FUZZ_CHECK(m.magic == kCmMagic && m.version == kCmVersion && m.length == sizeof m);
  FUZZ_CHECK(m.kind == expect);
  if (expect != CmKind::Reject) FUZZ_CHECK(m.credits >= 2 && m.ctrl_credits >= 1);
  // The same fields written by make_cm, as a peer would send them, and zero-padded as
  // rdma_cm pads them, parse back the same.
  CmMessage again = make_cm(m.kind, m.src_rank, m.dst_rank);
  std::memcpy(again.nonce, m.nonce, sizeof m.nonce);
  again.qp_num = m.qp_num;
  again.eager_limit = m.eager_limit;
  again.credits = m.credits;
  again.ctrl_credits = m.ctrl_credits;
  again.flags = m.flags;
  again.midsize_kib = m.midsize_kib;
  again.epoch = m.epoch;
  again.reason = m.reason;
  std::memcpy(again.mac, m.mac, sizeof m.mac);
  FUZZ_CHECK(std::memcmp(&again, &m, sizeof m) == 0);
  uint8_t padded[kConnectDataLimit + 1] = {};
  std::memcpy(padded, &again, sizeof again);
  CmMessage out;
  FUZZ_CHECK(parse_cm(padded, sizeof padded, expect, out, why) == RejectReason::None);
  FUZZ_CHECK(std::memcmp(&out, &m, sizeof m) == 0);
  // The MAC: what arrived proves nothing unless it was sealed with the key; sealed, it
  // verifies, and with any one bit flipped (or another key, or another bound nonce) it
  // does not. Which bit comes from the message itself.
  const SipKey key = job_key_mac_key(0x5eed);
  CmMessage sealed = m;
  seal(sealed, key, m.nonce);
  FUZZ_CHECK(verify(sealed, key, m.nonce));
  FUZZ_CHECK(!verify(sealed, job_key_mac_key(0x5eee), m.nonce));
  FUZZ_CHECK(!verify(sealed, key, nullptr));
  size_t bit = (size_t(m.qp_num) ^ m.eager_limit) % (sizeof sealed * 8);
  reinterpret_cast<uint8_t*>(&sealed)[bit / 8] ^= uint8_t(1u << (bit % 8));
  FUZZ_CHECK(!verify(sealed, key, m.nonce));
  return 0;
}
