// The shared-memory fabric's own behaviour: what it makes of a peer's address. A peer
// on this host is another process of the same user, but its address still arrives as
// bytes through the launcher, and is read as such.
#include <gtest/gtest.h>

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/settings.h"
#include "fabric/shm/shm_fabric.h"
#include "fabric/shm/shm_faults.h"
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

// Two contexts of this process, connected through shared memory.
void connect_pair(rdmx_context_t* a, rdmx_context_t* b) {
  std::vector<uint8_t> aa = address_of(a), ba = address_of(b);
  ASSERT_EQ(rdmx_add_peer(a, 1, ba.data(), ba.size()), RDMX_OK);
  ASSERT_EQ(rdmx_add_peer(b, 0, aa.data(), aa.size()), RDMX_OK);
  uint64_t one = 1, got = 0;
  rdmx_request_t *s = nullptr, *r = nullptr;
  rdmx_status_info_t st{};
  ASSERT_EQ(rdmx_irecv(b, 0, 0, 1, &got, sizeof got, nullptr, nullptr, &r), RDMX_OK);
  ASSERT_EQ(rdmx_isend(a, 1, 0, 1, &one, sizeof one, 0, nullptr, nullptr, &s), RDMX_OK);
  ASSERT_TRUE(drive({a, b}, r, &st, 5000));
  ASSERT_TRUE(drive({a, b}, s, &st, 5000));
  rdmx_request_free(a, s);
  rdmx_request_free(b, r);
}

// The bytes of message i, at j.
uint8_t byte_of(int i, uint64_t j) { return uint8_t(j * 7 + uint64_t(i) + (j >> 12)); }

// How the large reads went: split by the receiver, back halves copied by the sender.
struct SplitCounts {
  uint64_t split = 0, served = 0;
};

// Sixteen large messages, received one at a time, with the sender waiting in its
// progress loop on a thread of its own: every byte lands where it belongs.
SplitCounts large_messages_arrive_whole(uint32_t key) {
  rdmx_context_t* a = open_rank("shm", 0, 2, key);
  rdmx_context_t* b = open_rank("shm", 1, 2, key);
  if (!a || !b) return ADD_FAILURE() << "no pair of shm ranks", SplitCounts{};
  connect_pair(a, b);
  constexpr int kN = 16;
  const uint64_t lens[] = {(256 << 10) + 3, (1 << 20) + 4097, (2 << 20) - 1};
  std::vector<std::vector<uint8_t>> out(kN), in(kN);
  std::vector<rdmx_request_t*> sends(kN), recvs(kN);
  for (int i = 0; i < kN; ++i) {
    uint64_t len = lens[i % 3];
    out[size_t(i)].resize(len);
    in[size_t(i)].assign(len, 0);
    for (uint64_t j = 0; j < len; ++j) out[size_t(i)][j] = byte_of(i, j);
    EXPECT_EQ(
        rdmx_isend(a, 1, 0, 3, out[size_t(i)].data(), len, 0, nullptr, nullptr, &sends[size_t(i)]),
        RDMX_OK);
  }
  std::atomic<int> sent{0};
  std::thread sender([&] {
    rdmx_status_info_t st{};
    for (int i = 0; i < kN; ++i)
      if (drive({a}, sends[size_t(i)], &st, 10000) && st.error == RDMX_OK) ++sent;
  });
  rdmx_status_info_t st{};
  for (int i = 0; i < kN; ++i) {
    // One receive at a time: each read is alone, and the sender has to be quick.
    EXPECT_EQ(rdmx_irecv(b, 0, 0, 3, in[size_t(i)].data(), in[size_t(i)].size(), nullptr, nullptr,
                         &recvs[size_t(i)]),
              RDMX_OK);
    EXPECT_TRUE(drive({b}, recvs[size_t(i)], &st, 10000)) << "receive " << i;
    EXPECT_EQ(st.error, RDMX_OK);
    EXPECT_TRUE(in[size_t(i)] == out[size_t(i)]) << "receive " << i;
    rdmx_request_free(b, recvs[size_t(i)]);
  }
  // The FINs reach the sender as b goes on progressing.
  for (int k = 0; k < 100000 && sent.load() < kN; ++k) rdmx_progress(b);
  sender.join();
  EXPECT_EQ(sent.load(), kN);
  for (auto* x : sends) rdmx_request_free(a, x);
  rdmx_stats_t sa{}, sb{};
  rdmx_get_stats(a, &sa);
  rdmx_get_stats(b, &sb);
  rdmx_finalize(a);
  rdmx_finalize(b);
  return {sb.split_reads, sa.split_halves_served};
}

// A sender that waits in its progress loop copies the back half of each large read
// into the receiver's buffer (process_vm_writev) while the receiver copies the front.
TEST_F(Shm, SplitReadsAreSharedWithASenderThatServes) {
  SplitCounts n = large_messages_arrive_whole(10);
  EXPECT_GT(n.split, 0u);
  EXPECT_GT(n.served, 0u) << "the sender copied no back half in " << n.split << " split reads";
}

// Where the kernel refuses the sender's copies of back halves (a policy that changed
// during the job), the receiver copies each back half itself; the receives succeed.
TEST_F(Shm, ABackHalfTheSenderMayNotWriteIsReadByTheReceiver) {
  shm::faults().cma_write_refused = true;
  SplitCounts n = large_messages_arrive_whole(12);
  shm::faults().cma_write_refused = false;
  EXPECT_GT(n.split, 0u);
  EXPECT_EQ(n.served, 0u);
}

// Where the kernel refuses the receiver's cross-memory reads during the job, a large
// read goes by copies through the segment, as one that was never split does.
TEST_F(Shm, SplitReadsGoByCopiesOnceCrossMemoryReadsAreRefused) {
  shm::faults().cma_read_refused = true;
  SplitCounts n = large_messages_arrive_whole(13);
  shm::faults().cma_read_refused = false;
  EXPECT_EQ(n.split, 1u) << "the first read tries, and learns that reads copy now";
  EXPECT_EQ(n.served, 0u);
}

// A large read is split with the sender (shm_split_read.cpp), but a sender that does not
// come back to its progress (computing, say) holds up nothing: the receiver copies
// every part itself. Here the sender is not driven at all until the receives are done.
TEST_F(Shm, SplitReadsCompleteWhileTheirSenderIsBusy) {
  rdmx_context_t* a = open_rank("shm", 0, 2, 9);
  rdmx_context_t* b = open_rank("shm", 1, 2, 9);
  ASSERT_TRUE(a && b);
  connect_pair(a, b);
  rdmx_status_info_t st{};
  constexpr uint64_t kLen = (1 << 20) + 4097;
  constexpr int kN = 3;
  std::vector<std::vector<uint8_t>> out(kN, std::vector<uint8_t>(kLen)), in(out);
  std::vector<rdmx_request_t*> sends(kN), recvs(kN);
  for (int i = 0; i < kN; ++i) {
    for (uint64_t j = 0; j < kLen; ++j) out[size_t(i)][j] = byte_of(i, j);
    ASSERT_EQ(
        rdmx_irecv(b, 0, 0, 2, in[size_t(i)].data(), kLen, nullptr, nullptr, &recvs[size_t(i)]),
        RDMX_OK);
    ASSERT_EQ(
        rdmx_isend(a, 1, 0, 2, out[size_t(i)].data(), kLen, 0, nullptr, nullptr, &sends[size_t(i)]),
        RDMX_OK);
  }
  for (int i = 0; i < kN; ++i) {
    ASSERT_TRUE(drive({b}, recvs[size_t(i)], &st, 5000))
        << "receive " << i << " waited on its sender";
    EXPECT_EQ(st.error, RDMX_OK);
    EXPECT_EQ(st.length, kLen);
    EXPECT_TRUE(in[size_t(i)] == out[size_t(i)]) << "receive " << i;
    rdmx_request_free(b, recvs[size_t(i)]);
  }
  for (int i = 0; i < kN; ++i) {
    EXPECT_TRUE(drive({a, b}, sends[size_t(i)], &st, 5000));
    rdmx_request_free(a, sends[size_t(i)]);
  }
  rdmx_finalize(a);
  rdmx_finalize(b);
}

// What became of a failed read's buffer after its receive completed.
enum class SplitEnd { NotReached, Kept, WrittenAfter };

// One 4 MiB message, read as one split read (shm's rendezvous chunk): the receiver
// copies the front half and the sender claims the back half, then waits 200 ms before
// copying it (shm::Faults; the receiver waits 50 ms before its front half, so that the
// sender's thread, given the processor, claims first). The front half's last page
// cannot be read (PROT_NONE), so the receiver's copy fails and the receive completes in
// error. From then on the buffer is the program's again: nothing may write into it.
SplitEnd read_fails_while_the_sender_copies() {
  constexpr uint64_t kLen = 4 << 20, kFront = 2 << 20, kPage = 4096;
  void* mem = mmap(nullptr, kLen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return ADD_FAILURE() << "mmap failed", SplitEnd::NotReached;
  auto* out = static_cast<uint8_t*>(mem);
  for (uint64_t j = 0; j < kLen; ++j) out[j] = uint8_t(byte_of(5, j) | 1);  // never 0
  mprotect(out + kFront - kPage, kPage, PROT_NONE);
  rdmx_context_t* a = open_rank("shm", 0, 2, 11);
  rdmx_context_t* b = open_rank("shm", 1, 2, 11);
  SplitEnd end = SplitEnd::NotReached;
  if (a && b) {
    connect_pair(a, b);
    std::vector<uint8_t> in(kLen, 0);
    rdmx_request_t *send = nullptr, *recv = nullptr;
    EXPECT_EQ(rdmx_irecv(b, 0, 0, 4, in.data(), kLen, nullptr, nullptr, &recv), RDMX_OK);
    EXPECT_EQ(rdmx_isend(a, 1, 0, 4, out, kLen, 0, nullptr, nullptr, &send), RDMX_OK);
    shm::faults().split_copy_delay_us = 200000;
    shm::faults().split_front_delay_us = 50000;  // the sender's thread claims first
    std::atomic<bool> stop{false};
    std::thread sender([&] {
      while (!stop.load()) rdmx_progress(a);
    });
    rdmx_status_info_t st{};
    EXPECT_TRUE(drive({b}, recv, &st, 5000));
    EXPECT_NE(st.error, RDMX_OK) << "the receive read an unreadable page";
    std::vector<uint8_t> back(in.begin() + kFront, in.end());
    std::this_thread::sleep_for(std::chrono::milliseconds(400));  // the sender goes on
    if (!std::equal(back.begin(), back.end(), in.begin() + kFront))
      end = SplitEnd::WrittenAfter;
    else if (back[0] != 0)
      end = SplitEnd::Kept;  // the sender copied it before the receive completed
    stop = true;
    sender.join();
    shm::faults().split_copy_delay_us = 0;
    shm::faults().split_front_delay_us = 0;
    rdmx_request_free(b, recv);
    drive({a}, send, &st, 1000);
    rdmx_request_free(a, send);
  }
  if (a) rdmx_finalize(a);
  if (b) rdmx_finalize(b);
  munmap(mem, kLen);
  return end;
}

// A split read that fails completes only once its sender can no longer write into its
// buffer: a back half the sender has claimed is waited for (a claimed back half is
// being copied), one it has not claimed is taken from it. The same holds when the
// connection breaks with split reads open (Fabric::fail_splits).
TEST_F(Shm, AFailedSplitReadsBufferIsNotWrittenAfterItCompletes) {
  SplitEnd end = SplitEnd::NotReached;
  // The sender has to claim the back half before the receiver's front copy fails (the
  // receiver waits 50 ms for it): on a loaded machine it may miss it, so up to 3 tries.
  for (int k = 0; k < 3 && end == SplitEnd::NotReached; ++k)
    end = read_fails_while_the_sender_copies();
  ASSERT_TRUE(end != SplitEnd::NotReached) << "the sender never claimed the back half";
  EXPECT_TRUE(end == SplitEnd::Kept) << "the sender wrote into a buffer after its receive failed";
}

}  // namespace
}  // namespace rdmx::test
