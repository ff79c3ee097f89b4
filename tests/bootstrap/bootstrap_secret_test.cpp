// The standalone bootstrap with a job secret: ranks prove they know it before they are
// let in and rank 0 proves it back; a connection without the proof, or with a proof
// recorded for another connection, is turned away and costs the job nothing; a rank
// without the secret is told what is missing.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap_proof.h"
#include "bootstrap/bootstrap_test_util.h"
#include "protocol/connect_msg.h"
#include "rdmx/rdmx.h"

namespace rdmx::bootstrap {
namespace {

SipKey job_secret(uint8_t seed) {
  uint8_t b[16];
  for (int i = 0; i < 16; ++i) b[i] = uint8_t(seed + i);
  return protocol::secret_mac_key(b, sizeof b);
}

Config with_secret(Config c, const SipKey& k) {
  c.has_secret = true;
  c.key = k;
  return c;
}

// Reads rank 0's challenge on a raw connection (header, then 16 bytes).
bool read_challenge(int fd, uint8_t out[kChallengeBytes]) {
  uint8_t buf[20 + kChallengeBytes];
  size_t got = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (got < sizeof buf && std::chrono::steady_clock::now() < deadline) {
    ssize_t k = ::recv(fd, buf + got, sizeof buf - got, MSG_DONTWAIT);
    if (k > 0) got += size_t(k);
    if (k == 0) return false;
    if (k < 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::memcpy(out, buf + 20, kChallengeBytes);
  return got == sizeof buf;
}

TEST(BootstrapSecret, RanksThatKnowTheSecretJoin) {
  uint16_t port = free_port();
  SipKey k = job_secret(1);
  std::vector<Outcome> out(3);
  std::vector<std::thread> t;
  for (int r = 2; r >= 0; --r)
    t.emplace_back([&, r] { out[size_t(r)] = run_rank(with_secret(config(r, 3, port, 8000), k)); });
  for (auto& x : t) x.join();
  for (const Outcome& o : out) EXPECT_EQ(o.rc, RDMX_OK) << o.err;
  EXPECT_EQ(out[1].key, out[0].key);
  EXPECT_EQ(out[2].table.size(), 3u);
}

TEST(BootstrapSecret, StrangersWithoutAProofCostTheJobNothing) {
  uint16_t port = free_port();
  SipKey k = job_secret(1);
  Outcome r0, r1;
  std::thread t0([&] { r0 = run_rank(with_secret(config(0, 2, port, 8000), k)); });
  // A stranger who claims rank 1 without a proof; one with a proof made with another
  // secret; one replaying a genuine proof made for another challenge.
  int bare = raw_connect(port), forged = raw_connect(port), replay = raw_connect(port);
  ASSERT_GE(bare, 0);
  uint8_t challenge[kChallengeBytes];
  ASSERT_TRUE(read_challenge(forged, challenge));
  send_join(bare, 1, 2);
  std::vector<uint8_t> proof(kProofBytes);
  prove_join(job_secret(9), challenge, 1, 2, proof.data());
  send_join(forged, 1, 2, 0x53425852, proof);
  uint8_t other[kChallengeBytes] = {1, 2, 3};
  prove_join(k, other, 1, 2, proof.data());
  send_join(replay, 1, 2, 0x53425852, proof);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  r1 = run_rank(with_secret(config(1, 2, port, 8000), k));
  t0.join();
  for (int fd : {bare, forged, replay}) ::close(fd);
  EXPECT_EQ(r0.rc, RDMX_OK) << r0.err;
  EXPECT_EQ(r1.rc, RDMX_OK) << r1.err;
  EXPECT_EQ(r1.key, r0.key);
}

TEST(BootstrapSecret, ARankWithoutTheSecretIsToldWhatIsMissing) {
  uint16_t port = free_port();
  Outcome r0, r1;
  std::thread t0([&] { r0 = run_rank(with_secret(config(0, 2, port, 1500), job_secret(1))); });
  r1 = run_rank(config(1, 2, port, 1500));
  t0.join();
  EXPECT_NE(r1.rc, RDMX_OK);
  EXPECT_NE(r1.err.find("RDMX_JOB_SECRET is not set"), std::string::npos) << r1.err;
  EXPECT_NE(r0.rc, RDMX_OK) << "rank 0 started a job without rank 1";
}

TEST(BootstrapSecret, ARankZeroWithoutTheSecretIsNotTrusted) {
  uint16_t port = free_port();
  Outcome r0, r1;
  std::thread t0([&] { r0 = run_rank(config(0, 2, port, 1500)); });
  r1 = run_rank(with_secret(config(1, 2, port, 1500), job_secret(1)));
  t0.join();
  EXPECT_NE(r1.rc, RDMX_OK);
  EXPECT_NE(r1.err.find("is RDMX_JOB_SECRET set on every rank"), std::string::npos) << r1.err;
}

}  // namespace
}  // namespace rdmx::bootstrap
