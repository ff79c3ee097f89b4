// The shared receive context (RDMX_SRQ=1): one pool of receive buffers for every
// connection of the context, so that receive memory follows the pool's size, not the
// number of peers. A completion from it is matched to its connection by the tag the
// sender put in the remote CQ data (ofi_fabric.h); a message without a known tag is
// dropped and its buffer posted again.
//
// What happens when the pool is empty is the provider's: tcp leaves the message in its
// socket until a receive is posted (the sender's queue then fills and its sends wait),
// and the verbs provider's queue pairs retry without limit (RNR retry 7). Nothing is lost.
#include <rdma/fi_errno.h>

#include <algorithm>

#include "core/log.h"
#include "fabric/ofi/ofi_fabric.h"
#include "fabric/ofi/ofi_util.h"
#include "rdmx/rdmx.h"

namespace rdmx::ofi {
namespace {

// As the verbs backend's shared queue: the engine posts fewer where its pool is smaller.
constexpr uint32_t kSharedDepth = 4096;

}  // namespace

int Fabric::open_shared_receive(std::string& err) {
  const fi_info* info = info_.get();
  if (info->domain_attr->max_ep_srx_ctx == 0) {
    err = "RDMX_SRQ=1: libfabric provider '" + provider_ +
          "' offers no shared receive context (max_ep_srx_ctx 0); use RDMX_SRQ=0";
    return RDMX_ERR_UNSUPPORTED;
  }
  if (info->domain_attr->cq_data_size < sizeof(uint16_t)) {
    err = "RDMX_SRQ=1: libfabric provider '" + provider_ + "' carries " +
          std::to_string(info->domain_attr->cq_data_size) +
          " bytes of remote CQ data, and a shared receive needs 2 to name its connection; "
          "use RDMX_SRQ=0";
    return RDMX_ERR_UNSUPPORTED;
  }
  fi_rx_attr attr = *info->rx_attr;
  attr.size = std::min<uint64_t>(kSharedDepth, provider_rx_size_);
  int rc = fi_srx_context(domain_.get(), &attr, srx_.out(), nullptr);
  if (rc) {
    err = "RDMX_SRQ=1: " + fi_error("fi_srx_context", rc);
    return RDMX_ERR_FABRIC;
  }
  // Some providers report a shared context's receives through its own binding, others
  // through each endpoint's: bind both to the one completion queue.
  if ((rc = fi_ep_bind(srx_.get(), cq_.fid(), FI_RECV)) && rc != -FI_ENOSYS) {
    err = "RDMX_SRQ=1: " + fi_error("fi_ep_bind(shared receive context)", rc);
    return RDMX_ERR_FABRIC;
  }
  if (attr.size == 0) {
    err = "RDMX_SRQ=1: libfabric provider '" + provider_ + "' posts no shared receives";
    return RDMX_ERR_UNSUPPORTED;
  }
  shared_.init(nullptr, uint32_t(attr.size), Op::SharedRecv);
  shared_bufs_ = std::make_unique<SharedBuf[]>(attr.size);
  attrs_.srq = true;
  RDMX_LOG(LogLevel::Info, rank_, "ofi: shared receive context of %u receives", shared_.size());
  return RDMX_OK;
}

int Fabric::post_shared_recv(void* buf, uint32_t len, const Region& r, uint64_t wr) {
  if (!srx_) return RDMX_ERR_INVALID;
  Op* op = shared_.take();
  if (!op) return RDMX_ERR_AGAIN;
  op->wr = wr;
  shared_bufs_[op->index] = {buf, len, const_cast<void*>(r.desc())};
  ssize_t rc = post_shared_buf(op);
  if (rc) {
    shared_.give(op);
    return rc == -FI_EAGAIN ? RDMX_ERR_AGAIN : RDMX_ERR_FABRIC;
  }
  return RDMX_OK;
}

ssize_t Fabric::post_shared_buf(Op* op) {
  const SharedBuf& b = shared_bufs_[op->index];
  return fi_recv(srx_.get(), b.addr, b.len, b.desc, 0, &op->ctx);
}

int Fabric::take_tag(Conn* c, std::string& err) {
  if (!free_tags_.empty()) {
    c->tag = free_tags_.back();
    free_tags_.pop_back();
  } else if (tagged_.size() <= UINT16_MAX) {
    c->tag = uint16_t(tagged_.size());
    tagged_.push_back(nullptr);
  } else {
    err = "RDMX_SRQ=1: " + std::to_string(UINT16_MAX) +
          " connections already share this context's receive pool; close some (a lower "
          "RDMX_MAX_CONNECTIONS) or use RDMX_SRQ=0";
    c->ep.reset();
    return RDMX_ERR_NO_MEMORY;
  }
  tagged_[c->tag] = c;
  return RDMX_OK;
}

Conn* Fabric::sender_of(uint64_t flags, uint64_t data) const {
  if (!(flags & FI_REMOTE_CQ_DATA) || data == 0 || data >= tagged_.size()) return nullptr;
  return tagged_[data];
}

void Fabric::repost_stray(Op* op) {
  if (ssize_t rc = post_shared_buf(op)) {
    shared_.give(op);
    RDMX_LOG(LogLevel::Warn, rank_, "ofi: a shared receive buffer could not be posted again: %s",
             fi_strerror(int(-rc)));
  }
}

}  // namespace rdmx::ofi
