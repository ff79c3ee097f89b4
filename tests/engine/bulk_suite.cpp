// Large messages in both directions at once, at odd sizes and from and into odd
// offsets: every byte lands where it belongs. Through shared memory these are split
// reads, the two processes copying halves of one another's messages at the same time.
#include <vector>

#include "engine/engine_test.h"

namespace rdmx::test {
namespace {

TEST_P(EngineTest, LargeMessagesBothWaysAtOddSizesAndOffsets) {
  const std::vector<uint64_t> sizes = {(128 << 10) + 1, (1 << 20) + 4097, (3 << 20) - 5};
  run(2, [&sizes](Rank& r) {
    int peer = 1 - r.rank;
    constexpr uint64_t kSkew = 13;  // neither buffer starts on a page or a cache line
    std::vector<std::vector<uint8_t>> out, in;
    std::vector<rdmx_request_t*> q;
    for (int round = 0; round < 3; ++round)
      for (size_t k = 0; k < sizes.size(); ++k) {
        uint64_t seed = uint64_t(r.rank) * 100 + uint64_t(round) * 10 + k;
        out.emplace_back(sizes[k] + kSkew);
        std::vector<uint8_t> body(sizes[k]);
        fill(body, seed);
        std::copy(body.begin(), body.end(), out.back().begin() + kSkew);
        in.emplace_back(sizes[k] + kSkew + 7, 0xee);
        int tag = round * 10 + int(k);
        q.push_back(irecv(r, peer, tag, in.back().data() + kSkew, sizes[k]));
        q.push_back(isend(r, peer, tag, out.back().data() + kSkew, sizes[k]));
      }
    for (auto* x : q) EXPECT_EQ(r.finish(x).error, RDMX_OK);
    for (int round = 0, i = 0; round < 3; ++round)
      for (size_t k = 0; k < sizes.size(); ++k, ++i) {
        uint64_t seed = uint64_t(peer) * 100 + uint64_t(round) * 10 + k;
        const std::vector<uint8_t>& b = in[size_t(i)];
        EXPECT_TRUE(check(b.data() + kSkew, sizes[k], seed))
            << sizes[k] << " bytes, round " << round;
        for (uint64_t j = 0; j < kSkew; ++j) EXPECT_EQ(b[j], 0xee) << "written before the buffer";
        for (uint64_t j = kSkew + sizes[k]; j < b.size(); ++j)
          EXPECT_EQ(b[j], 0xee) << "written past the buffer";
      }
  });
}

}  // namespace
}  // namespace rdmx::test
