// The libfabric backend's own behaviour over the tcp provider: the connect data limit,
// rejects whose reason reaches the connecting side in words, an unreachable peer.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "config.h"
#include "core/thread_cpu.h"
#include "harness/child_rank.h"
#include "harness/world.h"
#include "rdmx/rdmx.h"
#if RDMX_BUILD_OFI
#include "fabric/ofi/ofi_fabric.h"
#include "protocol/connect_msg.h"
#endif

namespace rdmx::test {
namespace {

using Clock = std::chrono::steady_clock;

class OfiTcp : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why = backend_unavailable("ofi-tcp");
    if (!why.empty()) GTEST_SKIP() << "SKIPPED backend ofi-tcp: " << why;
  }
};

rdmx_context_t* open_ctx(int rank, int size, uint64_t job_key) {
  return open_rank("ofi-tcp", rank, size, job_key);
}

TEST_F(OfiTcp, WrongJobKeyIsRejectedWithTheReasonInWords) {
  rdmx_context_t* a = open_ctx(0, 2, 1111);
  rdmx_context_t* b = open_ctx(1, 2, 2222);
  ASSERT_TRUE(a && b);
  auto aa = address_of(a), ab = address_of(b);
  rdmx_add_peer(a, 1, ab.data(), ab.size());
  rdmx_add_peer(b, 0, aa.data(), aa.size());
  uint64_t v = 42;
  rdmx_request_t* req = nullptr;
  ASSERT_EQ(rdmx_isend(a, 1, 0, 5, &v, sizeof v, 0, nullptr, nullptr, &req), RDMX_OK);
  rdmx_status_info_t st{};
  ASSERT_TRUE(drive({a, b}, req, &st, 20000)) << "the rejected send never completed";
  EXPECT_EQ(st.error, RDMX_ERR_REJECTED);
  std::string why = rdmx_last_error(a);
  EXPECT_NE(why.find("rank 1 rejected the connection"), std::string::npos) << why;
  EXPECT_NE(why.find("did not prove membership"), std::string::npos) << why;
  rdmx_request_free(a, req);
  rdmx_finalize(a);
  rdmx_finalize(b);
}

TEST_F(OfiTcp, NobodyListeningFailsTheSendAsUnreachable) {
  rdmx_context_t* gone = open_ctx(1, 2, 7);
  ASSERT_TRUE(gone);
  auto addr = address_of(gone);
  rdmx_finalize(gone);  // its port is closed now
  rdmx_context_t* a = open_ctx(0, 2, 7);
  ASSERT_TRUE(a);
  rdmx_add_peer(a, 1, addr.data(), addr.size());
  uint64_t v = 1;
  rdmx_request_t* req = nullptr;
  ASSERT_EQ(rdmx_isend(a, 1, 0, 5, &v, sizeof v, 0, nullptr, nullptr, &req), RDMX_OK);
  rdmx_status_info_t st{};
  ASSERT_TRUE(drive({a}, req, &st, 20000)) << "the send to a closed port never completed";
  EXPECT_EQ(st.error, RDMX_ERR_UNREACHABLE);
  std::string why = rdmx_last_error(a);
  EXPECT_NE(why.find("nobody accepts connections"), std::string::npos) << why;
  rdmx_request_free(a, req);
  rdmx_finalize(a);
}

TEST_F(OfiTcp, AnAddressOfAnotherFabricIsRefusedClearly) {
  rdmx_context_t* a = open_ctx(0, 2, 7);
  ASSERT_TRUE(a);
  uint8_t junk[12] = {'L', 'O', 'O', 'P', 1, 0, 0, 0, 16, 0, 0, 0};
  rdmx_add_peer(a, 1, junk, sizeof junk);
  uint64_t v = 1;
  rdmx_request_t* req = nullptr;
  ASSERT_EQ(rdmx_isend(a, 1, 0, 5, &v, sizeof v, 0, nullptr, nullptr, &req), RDMX_OK);
  rdmx_status_info_t st{};
  ASSERT_TRUE(drive({a}, req, &st, 5000));
  EXPECT_NE(st.error, RDMX_OK);
  std::string why = rdmx_last_error(a);
  EXPECT_NE(why.find("not a libfabric address"), std::string::npos) << why;
  rdmx_request_free(a, req);
  rdmx_finalize(a);
}

// A send to rank 1 at `addr` from a fresh rank 0: the reason the send failed, or empty
// if it did not fail.
std::string send_fails_with(const std::vector<uint8_t>& addr) {
  rdmx_context_t* a = open_ctx(0, 2, 7);
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

// A real libfabric address with its endpoint name replaced: the blob's header (magic,
// name length at byte 4, provider) is 24 bytes.
std::vector<uint8_t> with_endpoint_name(const std::vector<uint8_t>& name) {
  rdmx_context_t* c = open_ctx(1, 2, 7);
  std::vector<uint8_t> blob = c ? address_of(c) : std::vector<uint8_t>(24);
  if (c) rdmx_finalize(c);
  blob.resize(24);
  uint16_t len = uint16_t(name.size());
  std::memcpy(blob.data() + 4, &len, sizeof len);
  blob.insert(blob.end(), name.begin(), name.end());
  return blob;
}

// An endpoint name of no bytes once reached memcpy(dst, NULL, 0) (undefined behaviour)
// and libfabric: it is refused when the address is read, saying what is accepted.
TEST_F(OfiTcp, AnAddressWithAnEmptyEndpointNameIsRefusedClearly) {
  std::string why = send_fails_with(with_endpoint_name({}));
  EXPECT_NE(why.find("empty (0-byte) endpoint name"), std::string::npos) << why;
  EXPECT_NE(why.find("-byte sockaddr_in"), std::string::npos) << why;
}

// libfabric reads a sockaddr of the size its family implies from whatever it is given:
// a name shorter than that, or of another family, is refused before it gets there.
TEST_F(OfiTcp, AnEndpointNameOfTheWrongSizeOrFamilyIsRefusedClearly) {
  std::string why = send_fails_with(with_endpoint_name({2, 0, 0x12, 0x34}));
  EXPECT_NE(why.find("4-byte endpoint name"), std::string::npos) << why;
  EXPECT_NE(why.find("-byte sockaddr_in"), std::string::npos) << why;

  std::vector<uint8_t> unix_name(16, 0);
  unix_name[0] = 1;  // AF_UNIX
  why = send_fails_with(with_endpoint_name(unix_name));
  EXPECT_NE(why.find("address family 1"), std::string::npos) << why;
  EXPECT_NE(why.find("-byte sockaddr_in"), std::string::npos) << why;
}

TEST_F(OfiTcp, AnAddressForAnotherProviderIsRefusedClearly) {
  std::vector<uint8_t> blob = with_endpoint_name(std::vector<uint8_t>(16, 0));
  std::memset(blob.data() + 8, 0, 16);
  std::memcpy(blob.data() + 8, "verbs", 5);  // the provider, from byte 8
  std::string why = send_fails_with(blob);
  EXPECT_NE(why.find("for libfabric provider 'verbs' but this side uses 'tcp'"), std::string::npos)
      << why;
}

#if RDMX_BUILD_OFI
// A sink that records what the fabric reports and rejects every request.
struct RecordingSink {
  ofi::Fabric* fabric = nullptr;
  std::vector<uint8_t> request;
  bool got_request = false;
  bool rejected = false;
  std::vector<uint8_t> reject_data;
  std::string conn_error;

  template <class Request>
  void on_connect_request(Request* req, const uint8_t* pdata, size_t len) {
    got_request = true;
    request.assign(pdata, pdata + len);
    fabric->reject(req, "no", 2);
  }
  void on_established(void*, const fabric::ConnAttrs&, const uint8_t*, size_t) {}
  void on_rejected(void*, const uint8_t* pdata, size_t len, const char*) {
    rejected = true;
    reject_data.assign(pdata, pdata + len);
  }
  void on_conn_error(void*, fabric::Failure, const char* why) { conn_error = why; }
  void on_recv(void*, uint64_t, uint32_t) {}
  void on_send_done(void*, uint64_t) {}
  void on_read_done(void*, uint64_t) {}
  void on_wr_error(void*, uint64_t, fabric::Failure, const char*) {}
};

TEST_F(OfiTcp, ConnectDataLimitIsCheckedAndTheWholeLimitArrives) {
  Settings s;
  s.ofi_provider = "tcp";
  ofi::Fabric a, b;
  std::string err;
  ASSERT_EQ(a.open(s, 0, err), RDMX_OK) << err;
  ASSERT_EQ(b.open(s, 1, err), RDMX_OK) << err;
  size_t limit = a.max_connect_data();
  EXPECT_EQ(limit + sizeof(ofi::CmHeader), 256u) << "tcp's FI_OPT_CM_DATA_SIZE is 256";
  EXPECT_GE(limit, sizeof(protocol::CmMessage));

  std::vector<uint8_t> addr(b.address(nullptr, 0));
  b.address(addr.data(), addr.size());
  std::vector<uint8_t> data(limit + 1);
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 7 + 1);

  ofi::Conn* too_big = nullptr;
  ASSERT_EQ(a.create_conn(addr.data(), addr.size(), nullptr, nullptr, &too_big, err), RDMX_OK)
      << err;
  err.clear();
  EXPECT_EQ(a.connect(too_big, data.data(), limit + 1, err), RDMX_ERR_INVALID);
  EXPECT_NE(err.find("exceeds the limit of " + std::to_string(limit)), std::string::npos) << err;
  EXPECT_NE(err.find("FI_OPT_CM_DATA_SIZE"), std::string::npos) << err;
  a.disconnect(too_big);

  ofi::Conn* exact = nullptr;
  ASSERT_EQ(a.create_conn(addr.data(), addr.size(), nullptr, nullptr, &exact, err), RDMX_OK);
  ASSERT_EQ(a.connect(exact, data.data(), limit, err), RDMX_OK) << err;
  RecordingSink sa, sb;
  sa.fabric = &a;
  sb.fabric = &b;
  auto deadline = Clock::now() + std::chrono::seconds(20);
  while (!sa.rejected && sa.conn_error.empty() && Clock::now() < deadline) {
    a.progress(sa);
    b.progress(sb);
  }
  ASSERT_TRUE(sb.got_request);
  EXPECT_EQ(sb.request, std::vector<uint8_t>(data.begin(), data.begin() + long(limit)))
      << "every byte up to the limit arrives, in order";
  ASSERT_TRUE(sa.rejected) << sa.conn_error;
  EXPECT_EQ(std::string(sa.reject_data.begin(), sa.reject_data.end()), "no");
}

// tcp takes the key rdmx asks for with each registration (no FI_MR_PROV_KEY), and its
// regions are the whole domain's: any connected peer that knows a key can read the
// region from offset 0. Keys 1, 2, 3... were guessed at once; random ones are not.
TEST_F(OfiTcp, RegionKeysAreRandomNotASequence) {
  Settings s;
  s.ofi_provider = "tcp";
  ofi::Fabric f;
  std::string err;
  ASSERT_EQ(f.open(s, 0, err), RDMX_OK) << err;
  constexpr int kRegions = 64;
  std::vector<uint8_t> mem(kRegions * 64);
  std::vector<ofi::Fabric::Region> regions(kRegions);
  std::vector<uint64_t> keys;
  for (int i = 0; i < kRegions; ++i) {
    ASSERT_EQ(f.reg(mem.data() + i * 64, 64, fabric::kLocalWrite | fabric::kRemoteRead,
                    regions[size_t(i)], err),
              RDMX_OK)
        << err;
    keys.push_back(regions[size_t(i)].key());
  }
  EXPECT_EQ(std::set<uint64_t>(keys.begin(), keys.end()).size(), size_t(kRegions));
  int steps_of_one = 0;  // consecutive registrations whose keys differ by 1
  for (size_t i = 1; i < keys.size(); ++i)
    steps_of_one += keys[i] - keys[i - 1] == 1 || keys[i - 1] - keys[i] == 1;
  EXPECT_EQ(steps_of_one, 0) << "keys " << keys[0] << ", " << keys[1] << ", " << keys[2] << "...";
  // Spread over the 64 bits: about half have the top bit set (for 64 random keys, fewer
  // than 8 or more than 56 has a chance below 1e-9).
  int top = 0;
  for (uint64_t k : keys) top += int(k >> 63);
  EXPECT_GE(top, 8);
  EXPECT_LE(top, 56);
  for (auto& r : regions) f.dereg(r);
}

// A provider with keys shorter than 64 bits gets keys of its size, still random.
TEST(OfiKeys, KeysAreCutToTheProvidersKeySize) {
  ofi::RandomKeys keys;
  keys.set_key_size(2);
  std::set<uint64_t> seen;
  std::string err;
  for (int i = 0; i < 64; ++i) {
    uint64_t k = 0;
    ASSERT_TRUE(keys.next(k, err)) << err;
    EXPECT_LT(k, 65536u);
    seen.insert(k);
  }
  EXPECT_GT(seen.size(), 32u);
}

// libfabric's discovery (fi_getinfo) is counted apart from the rest of rdmx_init: part
// of it, measured on the initialising thread; other fabrics count none.
TEST_F(OfiTcp, TheFabricLibrarysDiscoveryIsCountedApartInTheStatistics) {
  uint64_t cpu0 = thread_cpu_ns();
  rdmx_context_t* a = open_ctx(0, 1, 5);
  uint64_t init_ns = thread_cpu_ns() - cpu0;
  ASSERT_TRUE(a);
  rdmx_stats_t st{};
  ASSERT_EQ(rdmx_get_stats(a, &st), RDMX_OK);
  EXPECT_GT(st.library_discovery_ns, 0u);
  EXPECT_LE(st.library_discovery_ns, init_ns);
  rdmx_finalize(a);
  rdmx_context_t* l = open_rank("loopback", 0, 1, 5);
  ASSERT_TRUE(l);
  ASSERT_EQ(rdmx_get_stats(l, &st), RDMX_OK);
  EXPECT_EQ(st.library_discovery_ns, 0u);
  rdmx_finalize(l);
}

TEST_F(OfiTcp, AnAbsentProviderIsNamedWithWhatExists) {
  Settings s;
  s.ofi_provider = "no-such-provider";
  ofi::Fabric f;
  std::string err;
  EXPECT_EQ(f.open(s, 0, err), RDMX_ERR_NO_DEVICE);
  EXPECT_NE(err.find("RDMX_OFI_PROVIDER='no-such-provider'"), std::string::npos)
      << "the setting is named with its value: " << err;
  EXPECT_NE(err.find("tcp"), std::string::npos) << "the available providers are listed: " << err;
}
#endif

}  // namespace
}  // namespace rdmx::test
