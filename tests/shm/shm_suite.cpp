// The shared-memory fabric's own behaviour: what it makes of a peer's address. A peer
// on this host is another process of the same user, but its address still arrives as
// bytes through the launcher, and is read as such.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "core/settings.h"
#include "fabric/shm/shm_fabric.h"
#include "harness/child_rank.h"
#include "harness/world.h"
#include "rdmx/rdmx.h"

namespace rdmx::test {
namespace {

class Shm : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why = backend_unavailable("shm");
    if (!why.empty()) GTEST_SKIP() << "SKIPPED backend shm: " << why;
  }
};

// A real address of this host whose socket name is replaced by `fill` (no terminating
// NUL added).
std::vector<uint8_t> with_socket_name(const std::string& fill) {
  rdmx_context_t* c = open_rank("shm", 1, 2, 7);
  std::vector<uint8_t> blob = c ? address_of(c) : std::vector<uint8_t>();
  if (c) rdmx_finalize(c);
  shm::Address a{};
  if (blob.size() != sizeof a) return blob;
  std::memcpy(&a, blob.data(), sizeof a);
  std::memset(a.name, 0, sizeof a.name);
  std::memcpy(a.name, fill.data(), std::min(fill.size(), sizeof a.name));
  std::memcpy(blob.data(), &a, sizeof a);
  return blob;
}

// A send to rank 1 at `addr` from a fresh rank 0: the reason the send failed, or empty
// if it did not fail.
std::string send_fails_with(const std::vector<uint8_t>& addr) {
  rdmx_context_t* a = open_rank("shm", 0, 2, 7);
  if (!a) return "rank 0 did not open";
  EXPECT_EQ(rdmx_add_peer(a, 1, addr.data(), addr.size()), RDMX_OK) << rdmx_last_error(a);
  uint64_t v = 1;
  rdmx_request_t* req = nullptr;
  EXPECT_EQ(rdmx_isend(a, 1, 0, 5, &v, sizeof v, 0, nullptr, nullptr, &req), RDMX_OK);
  rdmx_status_info_t st{};
  std::string why = "the send never completed";
  if (req && drive({a}, req, &st, 5000))
    why = st.error == RDMX_OK ? std::string() : std::string(rdmx_last_error(a));
  if (req) rdmx_request_free(a, req);
  rdmx_finalize(a);
  return why;
}

// An empty socket name once sent the connection to the abstract socket "", and the
// error said the peer had exited; a name without its NUL was cut short and connected
// to another name. Both are refused for what they are.
TEST_F(Shm, AnAddressWithAnEmptyOrUnterminatedSocketNameIsRefusedClearly) {
  std::string why = send_fails_with(with_socket_name(""));
  EXPECT_NE(why.find("empty socket name"), std::string::npos) << why;
  why = send_fails_with(with_socket_name(std::string(shm::kMaxSocketName, 'x')));
  EXPECT_NE(why.find("not terminated"), std::string::npos) << why;
  EXPECT_NE(why.find(std::to_string(shm::kMaxSocketName - 1)), std::string::npos) << why;
}

// An address of another layout version is refused as such, not as a peer elsewhere.
TEST_F(Shm, AnAddressOfAnotherLayoutVersionIsRefusedClearly) {
  std::vector<uint8_t> blob = with_socket_name("rdmx-peer");
  ASSERT_EQ(blob.size(), sizeof(shm::Address));
  uint32_t v = shm::kLayoutVersion + 1;
  std::memcpy(blob.data() + offsetof(shm::Address, version), &v, sizeof v);
  std::string why = send_fails_with(blob);
  EXPECT_NE(why.find("layout version " + std::to_string(v)), std::string::npos) << why;
}

// Whether a peer is reached through shared memory (the composite fabric's choice, and
// rdmx_info's) agrees with whether a connection to it can be made: an address of this
// host that cannot be connected to is not "reachable". (Found by fuzz_address.)
TEST_F(Shm, OnlyAValidAddressOfThisHostIsReachable) {
  Settings s;
  std::string err;
  shm::Fabric f;
  ASSERT_EQ(f.open(s, 0, err), RDMX_OK) << err;
  std::vector<uint8_t> good = with_socket_name("rdmx-peer");
  EXPECT_TRUE(f.reachable(good.data(), good.size()));
  for (const std::string& name : {std::string(), std::string(shm::kMaxSocketName, 'x')}) {
    std::vector<uint8_t> bad = with_socket_name(name);
    EXPECT_FALSE(f.reachable(bad.data(), bad.size())) << "socket name of " << name.size();
    shm::Conn* c = nullptr;
    EXPECT_EQ(f.create_conn(bad.data(), bad.size(), nullptr, nullptr, &c, err), RDMX_ERR_INVALID);
  }
}

}  // namespace
}  // namespace rdmx::test
