#include "loopback/raw_peer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/settings.h"
#include "fabric/loopback/loopback_fabric.h"
#include "harness/world.h"

namespace rdmx::test {
namespace {

struct RawSink {
  RawOutcome* out;
  void on_connect_request(loopback::ConnRequest*, const uint8_t*, size_t) {}
  void on_established(void*, const fabric::ConnAttrs&, const uint8_t*, size_t) {
    out->established = true;
  }
  void on_rejected(void*, const uint8_t* p, size_t len, const char*) {
    out->rejected = true;
    std::string why;
    protocol::parse_cm(p, len, protocol::CmKind::Reject, out->reply, why);
  }
  void on_conn_error(void*, fabric::Failure, const char*) {}
  void on_recv(void*, uint64_t, uint32_t) {}
  void on_recv_unbuffered(void*, const uint8_t*, uint32_t) {}
  void on_send_done(void*, uint64_t) {}
  void on_read_done(void*, uint64_t) {}
  void on_wr_error(void*, uint64_t, fabric::Failure, const char*) {}
};

}  // namespace

RawOutcome raw_connect_outcome(rdmx_context_t* target, const void* pdata, size_t len) {
  RawOutcome o;
  std::vector<uint8_t> addr = address_of(target);
  loopback::Fabric raw;
  std::string err;
  Settings s;
  EXPECT_EQ(raw.open(s, 9, err), RDMX_OK);
  loopback::Conn* c = nullptr;
  EXPECT_EQ(raw.create_conn(addr.data(), addr.size(), nullptr, nullptr, &c, err), RDMX_OK);
  EXPECT_EQ(raw.connect(c, pdata, len, err), RDMX_OK);
  RawSink sink{&o};
  for (int i = 0; i < 100000 && !o.rejected && !o.established; ++i) {
    rdmx_progress(target);
    raw.progress(sink);
  }
  return o;
}

}  // namespace rdmx::test
