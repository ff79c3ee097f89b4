#include "engine/engine_test.h"

namespace rdmx::test {

rdmx_request_t* isend(Rank& r, int dest, int tag, const void* buf, uint64_t len, uint32_t cid,
                      uint32_t flags) {
  rdmx_request_t* req = nullptr;
  int rc = rdmx_isend(r.ctx, dest, cid, tag, buf, len, flags, nullptr, nullptr, &req);
  EXPECT_EQ(rc, RDMX_OK) << rdmx_last_error(r.ctx);
  return req;
}

rdmx_request_t* irecv(Rank& r, int src, int tag, void* buf, uint64_t len, uint32_t cid) {
  rdmx_request_t* req = nullptr;
  int rc = rdmx_irecv(r.ctx, src, cid, tag, buf, len, nullptr, nullptr, &req);
  EXPECT_EQ(rc, RDMX_OK) << rdmx_last_error(r.ctx);
  return req;
}

}  // namespace rdmx::test
