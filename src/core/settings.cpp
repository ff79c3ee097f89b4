#include "core/settings.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "bootstrap/bootstrap_socket.h"

namespace rdmx {
namespace {

enum class Kind { Unsigned, Signed, Choice, Text, HostPort };

struct Knob {
  const char* name;
  Kind kind;
  int64_t min, max;     // numeric range (inclusive)
  const char* choices;  // Choice: '|'-separated accepted values
  const char* def;      // default, as printed
  const char* doc;
  void* (*field)(Settings&);
};

template <auto Member>
void* field_of(Settings& s) {
  return &(s.*Member);
}

constexpr int64_t kGiB = int64_t(1) << 30;

const Knob kKnobs[] = {
    {"RDMX_FABRIC", Kind::Choice, 0, 0, "auto|loopback|verbs|ofi", "auto",
     "fabric backend: auto = verbs if an RDMA device exists, else libfabric tcp",
     field_of<&Settings::fabric>},
    {"RDMX_OFI_PROVIDER", Kind::Text, 0, 0, nullptr, "",
     "libfabric provider for the ofi backend (tcp, verbs); empty = tcp",
     field_of<&Settings::ofi_provider>},
    {"RDMX_EAGER_LIMIT", Kind::Unsigned, 0, 1 << 20, nullptr, "8192",
     "largest message (bytes) sent eagerly through bounce buffers; larger ones use rendezvous",
     field_of<&Settings::eager_limit>},
    {"RDMX_RNDV_CHUNK", Kind::Unsigned, 4096, kGiB, nullptr, "1048576",
     "bytes per RDMA READ in the rendezvous protocol", field_of<&Settings::rndv_chunk>},
    {"RDMX_CREDITS", Kind::Unsigned, 4, 4096, nullptr, "64",
     "receive buffers posted per connection (the sender's credit window)",
     field_of<&Settings::credits>},
    {"RDMX_MAX_RD_ATOMIC", Kind::Unsigned, 1, 255, nullptr, "16",
     "cap on the negotiated initiator depth / responder resources (RDMA READs in flight)",
     field_of<&Settings::max_rd_atomic>},
    {"RDMX_RETRY_COUNT", Kind::Unsigned, 0, 7, nullptr, "7",
     "transport retries after a timeout (rdma_conn_param.retry_count)",
     field_of<&Settings::retry_count>},
    {"RDMX_RNR_RETRY", Kind::Signed, -1, 7, nullptr, "-1",
     "receiver-not-ready retries; -1 = 0 with per-connection credits, 7 with RDMX_SRQ=1 (7 = "
     "forever)",
     field_of<&Settings::rnr_retry>},
    {"RDMX_FLOW_CONTROL", Kind::Unsigned, 0, 1, nullptr, "1",
     "rdma_conn_param.flow_control, exchanged with the peer and reported",
     field_of<&Settings::flow_control>},
    {"RDMX_SRQ", Kind::Unsigned, 0, 1, nullptr, "0",
     "1 = one shared receive queue per device instead of per-connection receives",
     field_of<&Settings::srq>},
    {"RDMX_VERBS_DEVICE", Kind::Text, 0, 0, nullptr, "",
     "verbs fabric: the RDMA device (e.g. mlx5_0, rxe1) or the IP address to use; empty = the "
     "first device with an IP address",
     field_of<&Settings::verbs_device>},
    {"RDMX_CONNECT_TIMEOUT_MS", Kind::Unsigned, 100, 3600000, nullptr, "30000",
     "how long a connection attempt may take before its sends fail",
     field_of<&Settings::connect_timeout_ms>},
    {"RDMX_VERBOSE", Kind::Unsigned, 0, 3, nullptr, "0",
     "log level on stderr: 0 errors, 1 warnings, 2 connections, 3 debug",
     field_of<&Settings::verbose>},
    {"RDMX_IDLE", Kind::Choice, 0, 0, "sleep|spin", "sleep",
     "what rdmx_wait does once nothing has happened for 50 us: sleep on the fabric's wait "
     "object, or keep polling (over libfabric the wait object costs ~1 us per message)",
     field_of<&Settings::idle>},
    {"RDMX_LOOPBACK_DEVICE_RD_ATOM", Kind::Unsigned, 1, 255, nullptr, "16",
     "loopback fabric: the emulated device's max_qp_rd_atom and max_qp_init_rd_atom",
     field_of<&Settings::loopback_rd_atom>},
    {"RDMX_LOOPBACK_MAX_INLINE", Kind::Unsigned, 0, 4096, nullptr, "128",
     "loopback fabric: the emulated device's inline-send limit in bytes",
     field_of<&Settings::loopback_max_inline>},
    {"RDMX_RANK", Kind::Signed, 0, INT32_MAX - 1, nullptr, "",
     "standalone bootstrap (rdmx_init_bootstrap): this process's rank", field_of<&Settings::rank>},
    {"RDMX_SIZE", Kind::Signed, 1, INT32_MAX, nullptr, "",
     "standalone bootstrap: the number of ranks", field_of<&Settings::size>},
    {"RDMX_BOOTSTRAP", Kind::HostPort, 0, 0, nullptr, "",
     "standalone bootstrap: where rank 0 listens; the other ranks connect there",
     field_of<&Settings::bootstrap>},
    {"RDMX_BOOTSTRAP_TIMEOUT_MS", Kind::Unsigned, 100, 3600000, nullptr, "30000",
     "standalone bootstrap: how long any rank waits for the others before giving up",
     field_of<&Settings::bootstrap_wait_ms>},
};

std::string accepted(const Knob& k) {
  switch (k.kind) {
    case Kind::Unsigned:
    case Kind::Signed:
      return "an integer from " + std::to_string(k.min) + " to " + std::to_string(k.max);
    case Kind::Choice: return std::string("one of ") + k.choices;
    case Kind::Text: return "any text";
    case Kind::HostPort: return "host:port with a port from 1 to 65535";
  }
  return "";
}

bool in_choices(const char* choices, const std::string& v) {
  std::string all = std::string("|") + choices + "|";
  return !v.empty() && all.find("|" + v + "|") != std::string::npos;
}

bool apply(const Knob& k, Settings& s, const std::string& v, std::string& err) {
  auto fail = [&] {
    err = std::string(k.name) + "='" + v + "' is not accepted: expected " + accepted(k);
    return false;
  };
  void* f = k.field(s);
  switch (k.kind) {
    case Kind::Unsigned:
    case Kind::Signed: {
      if (v.empty()) return fail();
      char* end = nullptr;
      errno = 0;
      long long n = std::strtoll(v.c_str(), &end, 0);
      if (errno || *end != '\0' || n < k.min || n > k.max) return fail();
      if (k.kind == Kind::Unsigned)
        *static_cast<uint64_t*>(f) = uint64_t(n);
      else
        *static_cast<int64_t*>(f) = int64_t(n);
      return true;
    }
    case Kind::Choice:
      if (!in_choices(k.choices, v)) return fail();
      *static_cast<std::string*>(f) = v;
      return true;
    case Kind::Text: *static_cast<std::string*>(f) = v; return true;
    case Kind::HostPort: {
      std::string host, why;
      uint16_t port = 0;
      if (!bootstrap::parse_host_port(v, host, port, why)) return fail();
      *static_cast<std::string*>(f) = v;
      return true;
    }
  }
  return fail();
}

}  // namespace

bool Settings::set(const std::string& name, const std::string& value, std::string& err) {
  for (const Knob& k : kKnobs)
    if (name == k.name) return apply(k, *this, value, err);
  err = "unknown setting '" + name + "'";
  return false;
}

bool Settings::load_from_env(std::string& err) {
  for (const Knob& k : kKnobs) {
    const char* v = std::getenv(k.name);
    if (v && !apply(k, *this, v, err)) return false;
  }
  return true;
}

void Settings::print_all(std::FILE* out) {
  for (const Knob& k : kKnobs)
    std::fprintf(out, "%-24s default %-8s %s (%s)\n", k.name, k.def[0] ? k.def : "\"\"", k.doc,
                 accepted(k).c_str());
}

}  // namespace rdmx
