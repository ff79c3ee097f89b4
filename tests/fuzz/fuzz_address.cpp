// The address blobs of every fabric, as rdmx_add_peer hands them to create_conn: the
// loopback fabric's, the shared-memory fabric's (reachable and create_conn), the
// libfabric and verbs decoders, and the composite fabric's split into a network part and
// a shared-memory part. Nothing is connected: create_conn only decodes and records
// where a later connect would go.
//
// Input: one byte choosing the fabric, one byte of mode (bit 0: the blob is a valid
// address of that fabric with the rest of the input xor-ed over it, so that mutations
// start from something every check accepts), then the blob.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <memory>
#include <string>

#include "config.h"
#include "core/settings.h"
#include "fabric/composite/composite_fabric.h"
#include "fabric/loopback/loopback_fabric.h"
#include "fabric/shm/shm_fabric.h"
#include "fuzz/fuzz_input.h"
#include "rdmx/rdmx.h"
#if RDMX_BUILD_OFI
#include <rdma/fabric.h>

#include "fabric/ofi/ofi_util.h"
#endif
#if RDMX_BUILD_VERBS
#include "fabric/verbs/verbs_device.h"
#endif

namespace rdmx {

// The composite fabric over loopback: a network part that needs no network.
template <>
struct composite::Name<loopback::Fabric> {
  static constexpr const char* value = "loopback+shm";
};

namespace {

using Blob = std::vector<uint8_t>;

// A fabric's own address: what a valid peer address of its kind looks like.
template <class F>
Blob own_address(const F& f) {
  Blob a(f.address(nullptr, 0));
  f.address(a.data(), a.size());
  return a;
}

// The blob to decode: the input, or the input xor-ed over a valid address.
Blob blob_of(const Blob& input, const Blob& valid, bool over_valid) {
  if (!over_valid) return input;
  Blob b = input.size() > valid.size() ? input : valid;
  for (size_t i = 0; i < std::min(input.size(), valid.size()); ++i) b[i] = valid[i] ^ input[i];
  return b;
}

const uint8_t* ptr(const Blob& b) { return b.empty() ? nullptr : b.data(); }

void loopback_address(const Blob& input, bool over_valid) {
  Settings s;
  std::string err;
  loopback::Fabric f;
  FUZZ_CHECK(f.open(s, 0, err) == RDMX_OK);
  Blob b = blob_of(input, own_address(f), over_valid);
  loopback::Conn* c = nullptr;
  int rc = f.create_conn(ptr(b), b.size(), nullptr, nullptr, &c, err);
  FUZZ_CHECK(rc == RDMX_OK || rc == RDMX_ERR_INVALID);
  FUZZ_CHECK(rc == RDMX_OK ? c != nullptr : !err.empty());
  if (rc == RDMX_OK) {
    uint32_t id;
    std::memcpy(&id, b.data() + 4, sizeof id);
    FUZZ_CHECK(b.size() == 12 && c->target_id == id && c->active);
  }
}

void shm_address(const Blob& input, bool over_valid) {
  Settings s;
  std::string err;
  shm::Fabric f;
  FUZZ_CHECK(f.open(s, 0, err) == RDMX_OK);
  Blob b = blob_of(input, own_address(f), over_valid);
  bool reachable = f.reachable(ptr(b), b.size());
  shm::Conn* c = nullptr;
  int rc = f.create_conn(ptr(b), b.size(), nullptr, nullptr, &c, err);
  FUZZ_CHECK(rc == RDMX_OK || rc == RDMX_ERR_INVALID || rc == RDMX_ERR_UNREACHABLE);
  FUZZ_CHECK((rc == RDMX_OK) == reachable);
  if (rc == RDMX_OK) FUZZ_CHECK(c->peer_name.size() < shm::kMaxSocketName);
}

void ofi_address(const Blob& input, bool over_valid) {
#if RDMX_BUILD_OFI
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(4711);
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  Blob b = blob_of(input, ofi::encode_address("tcp", &sin, sizeof sin), over_valid);
  // As the tcp provider's endpoints read it: sockaddr_in or sockaddr_in6 names only.
  for (uint32_t format : {uint32_t(FI_SOCKADDR_IN), uint32_t(FI_SOCKADDR)}) {
    std::string err;
    Blob name;
    if (!ofi::decode_address(ptr(b), b.size(), "tcp", format, name, err)) {
      FUZZ_CHECK(!err.empty() && name.empty());
      continue;
    }
    FUZZ_CHECK(!name.empty() && name.size() < b.size());
    if (format == FI_SOCKADDR_IN) FUZZ_CHECK(name.size() == sizeof(sockaddr_in));
    // What create_conn says of the peer, and what it hands libfabric: the name as sent.
    FUZZ_CHECK(!ofi::describe_sockaddr(name.data(), name.size()).empty());
    FUZZ_CHECK(ofi::encode_address("tcp", name.data(), name.size()).size() == b.size());
  }
#else
  (void)input;
  (void)over_valid;
#endif
}

void verbs_address(const Blob& input, bool over_valid) {
#if RDMX_BUILD_VERBS
  verbs::WireAddress valid{};
  valid.magic = verbs::kAddressMagic;
  valid.version = verbs::kAddressVersion;
  valid.family = 4;
  valid.port = 4711;
  valid.ip[0] = 127;
  valid.ip[3] = 1;
  valid.max_qp_rd_atom = 16;
  valid.max_qp_init_rd_atom = 16;
  valid.mtu = 1024;
  Blob v(sizeof valid);
  std::memcpy(v.data(), &valid, sizeof valid);
  Blob b = blob_of(input, v, over_valid);
  verbs::WireAddress out;
  sockaddr_storage dst;
  std::string err;
  if (!verbs::parse_address(ptr(b), b.size(), out, dst, err)) {
    FUZZ_CHECK(!err.empty());
    return;
  }
  FUZZ_CHECK(out.port != 0 && (dst.ss_family == AF_INET || dst.ss_family == AF_INET6));
  FUZZ_CHECK(!verbs::format_address(reinterpret_cast<const sockaddr*>(&dst)).empty());
#else
  (void)input;
  (void)over_valid;
#endif
}

void composite_address(const Blob& input, bool over_valid) {
  using Composite = composite::Fabric<loopback::Fabric>;
  Settings s;
  std::string err;
  Composite f;
  FUZZ_CHECK(f.open(s, 0, err) == RDMX_OK);
  Blob b = blob_of(input, own_address(f), over_valid);
  bool via_shm = f.via_shm(ptr(b), b.size());
  Composite::Conn* c = nullptr;
  int rc = f.create_conn(ptr(b), b.size(), nullptr, nullptr, &c, err);
  FUZZ_CHECK(rc == RDMX_OK || rc == RDMX_ERR_INVALID || rc == RDMX_ERR_UNREACHABLE);
  if (rc != RDMX_OK) {
    FUZZ_CHECK(!err.empty());
    return;
  }
  // Exactly one of the two fabrics made the connection: the one the address chose.
  FUZZ_CHECK((c->shm != nullptr) == via_shm && (c->net != nullptr) != via_shm);
}

}  // namespace
}  // namespace rdmx

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  rdmx_set_log_handler([](int, int32_t, const char*, void*) {}, nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rdmx::fuzz::Input in(data, size);
  uint8_t which = in.u8();
  bool over_valid = in.u8() & 1;
  rdmx::Blob blob = in.rest();
  switch (which % 5) {
    case 0: rdmx::loopback_address(blob, over_valid); break;
    case 1: rdmx::shm_address(blob, over_valid); break;
    case 2: rdmx::ofi_address(blob, over_valid); break;
    case 3: rdmx::verbs_address(blob, over_valid); break;
    case 4: rdmx::composite_address(blob, over_valid); break;
  }
  return 0;
}
