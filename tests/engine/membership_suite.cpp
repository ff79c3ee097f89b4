// Job membership on every backend: connections prove it with a MAC keyed by the job
// secret; ranks with different secrets cannot talk; a secret given after init lets
// waiting connections go ahead; one never given fails them in bounded time, in words.
#include <chrono>
#include <string>
#include <thread>

#include "engine/engine_test.h"

namespace rdmx::test {
namespace {

constexpr const char* kSecretA = "00112233445566778899aabbccddeeff";
constexpr const char* kSecretB = "ffeeddccbbaa99887766554433221100";

TEST_P(EngineTest, RanksWithTheSameSecretTalk) {
  run(2,
      [](Rank& r) {
        uint64_t v = 0x5ec4e7, w = 0;
        if (r.rank == 0) {
          EXPECT_EQ(r.finish(isend(r, 1, 3, &v, sizeof v)).error, RDMX_OK);
        } else {
          EXPECT_EQ(r.finish(irecv(r, 0, 3, &w, sizeof w)).error, RDMX_OK);
          EXPECT_EQ(w, v);
        }
      },
      {{"RDMX_JOB_SECRET", kSecretA}});
}

TEST_P(EngineTest, RanksWithDifferentSecretsCannotTalk) {
  run(
      2,
      [](Rank& r) {
        if (r.rank != 0) return;
        uint64_t v = 1;
        rdmx_status_info_t st = r.finish(isend(r, 1, 3, &v, sizeof v), 30000);
        EXPECT_EQ(st.error, RDMX_ERR_REJECTED);
        std::string why = rdmx_last_error(r.ctx);
        EXPECT_NE(why.find("did not prove membership"), std::string::npos) << why;
      },
      {},
      [](int rank) {
        return SettingList{{"RDMX_JOB_SECRET", rank ? kSecretB : kSecretA}};
      });
}

// The Open MPI component learns the secret only after rdmx_init (through the modex):
// requests and sends that come first wait for it.
TEST_P(EngineTest, ASecretGivenAfterInitLetsWaitingConnectionsGoAhead) {
  run(2,
      [](Rank& r) {
        uint8_t secret[16];
        for (int i = 0; i < 16; ++i) secret[i] = uint8_t(i * 7 + 1);
        uint64_t v = 42, w = 0;
        rdmx_request_t* q =
            r.rank == 0 ? isend(r, 1, 3, &v, sizeof v) : irecv(r, 0, 3, &w, sizeof w);
        // Rank 1 is later than rank 0: rank 0's request waits at rank 1.
        auto until =
            std::chrono::steady_clock::now() + std::chrono::milliseconds(100 + 200 * r.rank);
        while (std::chrono::steady_clock::now() < until) rdmx_progress(r.ctx);
        ASSERT_EQ(rdmx_set_job_secret(r.ctx, secret, sizeof secret), RDMX_OK)
            << rdmx_last_error(r.ctx);
        EXPECT_EQ(r.finish(q).error, RDMX_OK) << rdmx_last_error(r.ctx);
        if (r.rank == 1) {
          EXPECT_EQ(w, v);
        }
      },
      {{"RDMX_AUTH", "secret"}});
}

TEST_P(EngineTest, ASecretNeverGivenFailsTheSendInBoundedTime) {
  run(2,
      [](Rank& r) {
        if (r.rank != 0) return;
        uint64_t v = 1;
        auto t0 = std::chrono::steady_clock::now();
        rdmx_status_info_t st = r.finish(isend(r, 1, 3, &v, sizeof v), 20000);
        auto took = std::chrono::steady_clock::now() - t0;
        EXPECT_EQ(st.error, RDMX_ERR_TIMEOUT);
        EXPECT_LT(took, std::chrono::seconds(5));
        std::string why = rdmx_last_error(r.ctx);
        EXPECT_NE(why.find("no job secret was given"), std::string::npos) << why;
      },
      {{"RDMX_AUTH", "secret"}, {"RDMX_CONNECT_TIMEOUT_MS", "300"}});
}

}  // namespace
}  // namespace rdmx::test
