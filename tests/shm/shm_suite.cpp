// The shared-memory fabric's own behaviour: what it makes of a peer's address. A peer
// on this host is another process of the same user, but its address still arrives as
// bytes through the launcher, and is read as such.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

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

}  // namespace
}  // namespace rdmx::test
