// Opening a libfabric context: choosing the provider and its domain, the queues, the
// passive endpoint and the limits every connection inherits; the address blob; memory
// registration.
#include "fabric/ofi/ofi_fabric.h"

#include <dirent.h>
#include <rdma/fi_errno.h>

#include <algorithm>
#include <cstring>

#include "core/log.h"
#include "core/thread_cpu.h"
#include "fabric/ofi/ofi_util.h"
#include "rdmx/rdmx.h"
#include "topology/software_device.h"

namespace rdmx::ofi {
namespace {

constexpr uint32_t kApiVersion = FI_VERSION(1, 17);
constexpr size_t kCqSize = 16384;
constexpr uint64_t kMaxQueue = 1024;
// libfabric 2 (Debian 13) marks FI_MR_BASIC and FI_LOCAL_MR deprecated with a warning
// at every use, yet a provider answering this API 1.x request may still report them:
// their values, which the ABI keeps (mr_mode FI_MR_BASIC = 1, mode bit 55).
constexpr uint64_t kMrModeBasic = 1;
constexpr uint64_t kModeLocalMr = 1ull << 55;

// What rdmx asks of a provider: connected endpoints with messages and RMA, memory
// registration as rdmx can do it, rx_size receives per endpoint (0: any), and the
// provider named prov (empty: any).
Info hints_for(const std::string& prov, uint64_t rx_size) {
  Info hints(fi_allocinfo());
  if (!hints) return hints;
  hints->ep_attr->type = FI_EP_MSG;
  hints->caps = FI_MSG | FI_RMA;
  hints->mode = FI_CONTEXT | FI_CONTEXT2 | FI_RX_CQ_DATA;
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  hints->rx_attr->size = rx_size;
  if (!prov.empty()) hints->fabric_attr->prov_name = ::strdup(prov.c_str());
  return hints;
}

// The providers here that offer what rdmx asks, for the error that names one that does not.
std::string usable_providers() {
  Info hints = hints_for("", 0);
  fi_info* list = nullptr;
  if (!hints || fi_getinfo(kApiVersion, nullptr, nullptr, 0, hints.get(), &list) != 0)
    return "none";
  Info owner(list);
  std::vector<std::string> names;
  for (fi_info* i = list; i; i = i->next)
    if (std::find(names.begin(), names.end(), i->fabric_attr->prov_name) == names.end())
      names.push_back(i->fabric_attr->prov_name);
  std::string out;
  for (auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The setting that chose the provider, as the user wrote it, for error messages.
std::string provider_setting(const Settings& s) {
  return s.ofi_provider.empty() ? "RDMX_OFI_PROVIDER='' (tcp)"
                                : "RDMX_OFI_PROVIDER='" + s.ofi_provider + "'";
}

bool rdma_device_present() {
  DIR* d = ::opendir("/sys/class/infiniband");
  if (!d) return false;
  bool found = false;
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') found = true;
  ::closedir(d);
  return found;
}

// Prefers an IPv4 address on a real interface, so that other hosts can reach it.
fi_info* choose(fi_info* list) {
  for (fi_info* i = list; i; i = i->next)
    if (i->addr_format == FI_SOCKADDR_IN && i->domain_attr->name &&
        std::strcmp(i->domain_attr->name, "lo") != 0)
      return i;
  for (fi_info* i = list; i; i = i->next)
    if (i->addr_format == FI_SOCKADDR_IN) return i;
  return list;
}

}  // namespace

void OpTable::init(Conn* c, uint32_t n, Op::Kind default_kind) {
  ops_ = std::make_unique<Op[]>(n);
  free_ = std::make_unique<uint32_t[]>(n);
  size_ = n;
  free_count_ = n;
  for (uint32_t i = 0; i < n; ++i) {
    ops_[i].conn = c;
    ops_[i].index = i;
    ops_[i].kind = default_kind;
    free_[i] = n - 1 - i;
  }
}

Fabric::~Fabric() {
  for (auto& c : conns_) c->ep.reset();
  srx_.reset();
  for (fid_mr* mr : mrs_) fi_close(&mr->fid);
  mrs_.clear();
  if (request_.info) fi_freeinfo(request_.info);
  pep_.reset();
  cq_.reset();
  eq_.reset();
  domain_.reset();
  fabric_.reset();
}

int Fabric::open(const Settings& s, int32_t rank, std::string& err) {
  rank_ = rank;
  provider_ = s.ofi_provider.empty() ? "tcp" : s.ofi_provider;
  // Every connection posts RDMX_CREDITS regular and a few control receives.
  uint64_t want_rx = std::max<uint64_t>(256, fabric::max_credits(s) + 16);

  Info hints = hints_for(provider_, want_rx);
  if (!hints || !hints->fabric_attr->prov_name) {
    err = "out of memory for fi_allocinfo";
    return RDMX_ERR_NO_MEMORY;
  }

  // The first call in a process initialises every provider built into libfabric, with
  // or without a filter (1.17's verbs provider reads /proc/kallsyms twice): its cost is
  // counted apart (rdmx_stats_t::library_discovery_ns).
  fi_info* list = nullptr;
  uint64_t cpu0 = thread_cpu_ns();
  int rc = fi_getinfo(kApiVersion, nullptr, nullptr, 0, hints.get(), &list);
  discovery_ns_ = thread_cpu_ns() - cpu0;
  Info all(list);
  if (rc == -FI_ENODATA) {
    // Tell apart "no such provider here" and "the provider cannot meet the queue depth".
    hints->rx_attr->size = 0;
    fi_info* plain = nullptr;
    if (fi_getinfo(kApiVersion, nullptr, nullptr, 0, hints.get(), &plain) == 0) {
      Info p(plain);
      err = provider_setting(s) + ": libfabric provider '" + provider_ + "' cannot post " +
            std::to_string(want_rx) + " receives per connection (at most " +
            std::to_string(plain->rx_attr->size) + "); lower RDMX_CREDITS";
      return RDMX_ERR_INVALID;
    }
    uint32_t v = fi_version();
    err = provider_setting(s) + ": libfabric " + std::to_string(FI_MAJOR(v)) + "." +
          std::to_string(FI_MINOR(v)) + " has no usable '" + provider_ +
          "' provider for FI_EP_MSG endpoints with FI_MSG and FI_RMA (fi_getinfo: " +
          fi_strerror(-rc) + "); providers here that offer them: " + usable_providers();
    if (provider_ == "verbs" && !rdma_device_present())
      err +=
          "; the verbs provider needs an RDMA device and there is none "
          "(/sys/class/infiniband is empty)";
    return RDMX_ERR_NO_DEVICE;
  }
  if (rc) {
    err = provider_setting(s) + ": fi_getinfo: " + fi_strerror(-rc);
    return RDMX_ERR_FABRIC;
  }
  info_.reset(fi_dupinfo(choose(list)));
  if (!info_) {
    err = "out of memory for fi_dupinfo";
    return RDMX_ERR_NO_MEMORY;
  }
  fi_info* info = info_.get();

  uint64_t mode = info->domain_attr->mr_mode;
  if (mode == kMrModeBasic) mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
  mr_local_ = (mode & FI_MR_LOCAL) || (info->mode & kModeLocalMr);
  mr_virt_addr_ = mode & FI_MR_VIRT_ADDR;
  mr_prov_key_ = mode & FI_MR_PROV_KEY;
  keys_.set_key_size(info->domain_attr->mr_key_size);
  provider_rx_size_ = info->rx_attr->size;
  // Providers may offer the device maximum; every connection gets queues of this size,
  // so ask for what the engine uses (its credit window) and a moderate send queue.
  if (info->rx_attr->size > std::max<uint64_t>(want_rx, kMaxQueue))
    info->rx_attr->size = std::max<uint64_t>(want_rx, kMaxQueue);
  if (info->tx_attr->size > kMaxQueue) info->tx_attr->size = kMaxQueue;
  rx_depth_ = uint32_t(info->rx_attr->size);
  tx_depth_ = uint32_t(info->tx_attr->size);
  selective_ = !(info->mode & (FI_CONTEXT | FI_CONTEXT2));
  if (tx_depth_ < 2) {
    err = "provider '" + provider_ + "' offers a transmit queue of " + std::to_string(tx_depth_) +
          " entries";
    return RDMX_ERR_NO_DEVICE;
  }

  rd_atom_ = uint8_t(std::min<uint64_t>({s.max_rd_atomic, tx_depth_, 255}));
  attrs_.initiator_depth = rd_atom_;
  attrs_.responder_resources = rd_atom_;
  attrs_.max_inline = uint32_t(std::min<size_t>(info->tx_attr->inject_size, 1u << 16));
  attrs_.max_msg_size = info->ep_attr->max_msg_size;
  attrs_.max_sge = uint32_t(std::min<size_t>(info->tx_attr->iov_limit, kMaxSge));
  attrs_.max_send_wr = tx_depth_;
  attrs_.retry_count = 7;  // libfabric asks for the maximum; not configurable here
  attrs_.rnr_retry = 7;    // a message without a posted receive waits (retry forever)
  attrs_.flow_control = true;
  attrs_.srq = false;
  attrs_.sends_unregistered = !mr_local_ && attrs_.max_sge >= 2;
  // The verbs provider names its domain after the device ("rxe0", "mlx5_0-xrc").
  if (provider_ == "verbs" && info->domain_attr->name) {
    std::string dev = info->domain_attr->name;
    software_device_ = topology::is_software_rdma_device(dev.substr(0, dev.find('-')));
  }

  if ((rc = fi_fabric(info->fabric_attr, fabric_.out(), nullptr))) {
    err = fi_error("fi_fabric", rc);
    return RDMX_ERR_FABRIC;
  }
  if ((rc = fi_domain(fabric_.get(), info, domain_.out(), nullptr))) {
    err = fi_error("fi_domain", rc);
    return RDMX_ERR_FABRIC;
  }
  // Queues with a file descriptor to sleep on where the provider offers one (wait()),
  // else without: progress never blocks either way.
  fi_eq_attr eqa{};
  eqa.wait_obj = FI_WAIT_FD;
  if (fi_eq_open(fabric_.get(), &eqa, eq_.out(), nullptr)) {
    eqa.wait_obj = FI_WAIT_NONE;
    if ((rc = fi_eq_open(fabric_.get(), &eqa, eq_.out(), nullptr))) {
      err = fi_error("fi_eq_open", rc);
      return RDMX_ERR_FABRIC;
    }
  }
  fi_cq_attr cqa{};
  cqa.format = FI_CQ_FORMAT_DATA;
  rc = -FI_ENODATA;
  // A completion queue with a wait object slows every completion on tcp (about 1 us per
  // message): only where rdmx_wait may sleep (RDMX_IDLE=sleep).
  for (auto wait_obj : {s.idle == "sleep" ? FI_WAIT_FD : FI_WAIT_NONE, FI_WAIT_NONE}) {
    cqa.wait_obj = wait_obj;
    cqa.size = kCqSize;
    if ((rc = fi_cq_open(domain_.get(), &cqa, cq_.out(), nullptr)) == 0) break;
    cqa.size = 0;  // the provider's default
    if ((rc = fi_cq_open(domain_.get(), &cqa, cq_.out(), nullptr)) == 0) break;
  }
  if (rc) {
    err = fi_error("fi_cq_open", rc);
    return RDMX_ERR_FABRIC;
  }
  if (cqa.wait_obj != FI_WAIT_FD || fi_control(cq_.fid(), FI_GETWAIT, &cq_fd_)) cq_fd_ = -1;
  if (eqa.wait_obj != FI_WAIT_FD || fi_control(eq_.fid(), FI_GETWAIT, &eq_fd_)) eq_fd_ = -1;
  RDMX_LOG(LogLevel::Info, rank, "ofi: waits sleep on %s",
           cq_fd_ < 0   ? "short timers (no wait object)"
           : eq_fd_ < 0 ? "the completion queue's fd"
                        : "the queues' fds");
  if (s.srq > 0) {
    if (!shared_receive_ok_) {
      err = "RDMX_SRQ=1: this engine posts its receive buffers per connection; use RDMX_SRQ=0";
      return RDMX_ERR_UNSUPPORTED;
    }
    std::string why;
    if ((rc = open_shared_receive(why))) {
      if (!s.srq_auto || rc != RDMX_ERR_UNSUPPORTED) {
        err = why;
        return rc;
      }
      RDMX_LOG(LogLevel::Info, rank_, "ofi: receives per connection: %s", why.c_str());
    }
  }
  if ((rc = fi_passive_ep(fabric_.get(), info, pep_.out(), nullptr))) {
    err = fi_error("fi_passive_ep", rc);
    return RDMX_ERR_FABRIC;
  }
  if ((rc = fi_pep_bind(pep_.get(), eq_.fid(), 0))) {
    err = fi_error("fi_pep_bind", rc);
    return RDMX_ERR_FABRIC;
  }
  if ((rc = fi_listen(pep_.get()))) {
    err = fi_error("fi_listen", rc);
    return RDMX_ERR_FABRIC;
  }
  size_t cm = 0, cm_len = sizeof cm;
  rc = fi_getopt(pep_.fid(), FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &cm, &cm_len);
  cm_data_size_ = rc == 0 ? std::min(cm, kMaxCmData) : 0;
  if (rc) {
    err = fi_error("fi_getopt(FI_OPT_CM_DATA_SIZE)", rc);
    return RDMX_ERR_FABRIC;
  }
  if (cm_data_size_ < sizeof(CmHeader) + 8) {
    err = "provider '" + provider_ + "' carries only " + std::to_string(cm_data_size_) +
          " bytes of connection data (FI_OPT_CM_DATA_SIZE)";
    return RDMX_ERR_NO_DEVICE;
  }
  uint8_t name[128];
  size_t name_len = sizeof name;
  if ((rc = fi_getname(pep_.fid(), name, &name_len))) {
    err = fi_error("fi_getname", rc);
    return RDMX_ERR_FABRIC;
  }
  listen_addr_ = encode_address(provider_, name, name_len);
  RDMX_LOG(LogLevel::Info, rank_,
           "ofi: provider %s, domain %s, listening on %s; mr_mode%s%s%s, inject %u, tx %u, rx "
           "%u, connect data %zu, read depth %u, %s",
           provider_.c_str(), info->domain_attr->name, describe_sockaddr(name, name_len).c_str(),
           mr_local_ ? " local" : "", mr_virt_addr_ ? " virt_addr" : " offsets",
           mr_prov_key_ ? " prov_key" : " requested_keys", attrs_.max_inline, tx_depth_, rx_depth_,
           cm_data_size_, attrs_.initiator_depth,
           selective_ ? "sends reported when asked" : "every send reported");
  return RDMX_OK;
}

size_t Fabric::address(uint8_t* buf, size_t cap) const {
  if (buf && cap >= listen_addr_.size()) std::memcpy(buf, listen_addr_.data(), listen_addr_.size());
  return listen_addr_.size();
}

int Fabric::reg(void* addr, size_t len, uint32_t access, Region& out, std::string& err) {
  uint64_t acc = FI_SEND | FI_RECV | FI_READ | FI_WRITE;
  if (access & fabric::kRemoteRead) acc |= FI_REMOTE_READ;
  fid_mr* mr = nullptr;
  int rc;
  // A random key may already be taken in the domain (-FI_ENOKEY): draw another. With 64
  // random bits that is all but impossible, so a few draws are plenty; with a provider's
  // shorter keys, or one that reuses keys, the bound stops a long search.
  constexpr int kDraws = 8;
  for (int draw = 1;; ++draw) {
    uint64_t key = 0;
    if (!mr_prov_key_ && !keys_.next(key, err)) return RDMX_ERR_FABRIC;
    rc = fi_mr_reg(domain_.get(), addr, len == 0 ? 1 : len, acc, 0, key, 0, &mr, nullptr);
    if (rc != -FI_ENOKEY || mr_prov_key_ || draw == kDraws) break;
  }
  if (rc) {
    err = fi_error("fi_mr_reg", rc) + " (" + std::to_string(len) + " bytes)";
    return RDMX_ERR_NO_MEMORY;
  }
  mrs_.insert(mr);
  out.mr_ = mr;
  out.desc_ = fi_mr_desc(mr);
  out.key_ = fi_mr_key(mr);
  out.base_ = mr_virt_addr_ ? 0 : reinterpret_cast<uintptr_t>(addr);
  return RDMX_OK;
}

void Fabric::dereg(Region& r) {
  if (!r.mr_) return;
  mrs_.erase(r.mr_);
  fi_close(&r.mr_->fid);
  r = Region{};
}

}  // namespace rdmx::ofi
