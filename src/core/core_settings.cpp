// The engine's settings: fabric choice, protocol sizes, connection parameters, logging.
#include "core/setting_decl.h"

#include <cctype>
#include <string>

namespace rdmx {
namespace {

constexpr int64_t kGiB = int64_t(1) << 30;
constexpr const char* kFabrics[] = {"auto", "loopback", "verbs", "ofi", "shm", nullptr};
constexpr const char* kIdle[] = {"sleep", "spin", nullptr};
constexpr const char* kAuth[] = {"auto", "job-key", "secret", nullptr};
constexpr const char* kRcache[] = {"auto", "on", "off", nullptr};

bool is_secret_hex(const std::string& v) {
  if (v.size() < 32 || v.size() > 128 || v.size() % 2) return false;
  for (char c : v)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

constexpr SettingDecl kDecls[] = {
    {.name = "RDMX_FABRIC",
     .type = RDMX_SETTING_CHOICE,
     .def_text = "auto",
     .choices = kFabrics,
     .help = "fabric backend for peers on other hosts: auto = verbs if an RDMA device exists, else "
             "libfabric tcp; shm = shared memory only (every rank on this host); peers on this "
             "host use shared memory unless RDMX_SHM=off",
     .store_text = store_text<&Settings::fabric>},
    {.name = "RDMX_EAGER_LIMIT",
     .type = RDMX_SETTING_INT,
     .def = -1,
     .min = -1,
     .max = 1 << 20,
     .help = "largest message (bytes) sent eagerly, in one SEND through the peer's receive "
             "buffers; larger ones go in segments or by rendezvous; -1 = the fabric's choice "
             "(128 KiB over libfabric tcp, 8 KiB otherwise)",
     .store_int = store_int<&Settings::eager_limit>},
    {.name = "RDMX_MIDSIZE_LIMIT",
     .type = RDMX_SETTING_INT,
     .def = -1,
     .min = -1,
     .max = 16 << 20,
     .help = "largest message (bytes, used rounded down to a KiB) sent in eager-limit "
             "segments through the receive buffers instead of by rendezvous; 0 = none; -1 = the "
             "fabric's choice (32 KiB through shared memory; none over libfabric and verbs)",
     .store_int = store_int<&Settings::midsize_limit>},
    {.name = "RDMX_RNDV_CHUNK",
     .type = RDMX_SETTING_INT,
     .def = -1,
     .min = -1,
     .max = kGiB,
     .help = "bytes per RDMA READ in the rendezvous protocol, with as many in flight as the "
             "negotiated initiator depth; -1 = the fabric's choice (1 MiB, and 256 KiB over "
             "libfabric tcp for a message read while no other is; 4 MiB through "
             "shared memory, where a read is one cross-memory copy; on a software "
             "RDMA device such as rxe or siw, 64 KiB with at most 4 in flight, as its "
             "retransmission of whole READ responses collapses on a lossy path)",
     .store_int = store_int<&Settings::rndv_chunk>,
     .check_int = [](int64_t v) { return v == -1 || v >= 4096; },
     .accepted = "-1 or an integer from 4096 to 1073741824"},
    {.name = "RDMX_CREDITS",
     .type = RDMX_SETTING_INT,
     .def = -1,
     .min = -1,
     .max = 4096,
     .help = "receive buffers posted per connection (the sender's credit window); -1 = the "
             "fabric's choice (32 through shared memory, where fewer messages in flight "
             "carry more of them; 24 over libfabric tcp, whose buffers hold 128 KiB; 64 "
             "otherwise)",
     .store_int = store_int<&Settings::credits>,
     .check_int = [](int64_t v) { return v == -1 || v >= 4; },
     .accepted = "-1 or an integer from 4 to 4096"},
    {.name = "RDMX_UNEXPECTED_LIMIT",
     .type = RDMX_SETTING_INT,
     .def = 32 << 20,
     .min = 0,
     .max = int64_t(1) << 40,
     .help = "bytes of unexpected eager messages (arrived before their receive) a rank holds "
             "before it asks the peers sending them to send what is larger than 256 bytes by "
             "rendezvous, until it holds half as much; 0 = no bound",
     .store_int = store_int<&Settings::unexpected_limit>},
    {.name = "RDMX_MAX_RD_ATOMIC",
     .type = RDMX_SETTING_INT,
     .def = 16,
     .min = 1,
     .max = 255,
     .help = "cap on the negotiated initiator depth / responder resources (RDMA READs in flight)",
     .store_int = store_int<&Settings::max_rd_atomic>},
    {.name = "RDMX_RETRY_COUNT",
     .type = RDMX_SETTING_INT,
     .def = 7,
     .min = 0,
     .max = 7,
     .help = "transport retries after a timeout (rdma_conn_param.retry_count)",
     .store_int = store_int<&Settings::retry_count>},
    {.name = "RDMX_RNR_RETRY",
     .type = RDMX_SETTING_INT,
     .def = -1,
     .min = -1,
     .max = 7,
     .help = "receiver-not-ready retries; -1 = 0 with per-connection credits, 7 with a shared "
             "receive pool (RDMX_SRQ) (7 = forever)",
     .store_int = store_int<&Settings::rnr_retry>},
    {.name = "RDMX_FLOW_CONTROL",
     .type = RDMX_SETTING_INT,
     .def = 1,
     .min = 0,
     .max = 1,
     .help = "rdma_conn_param.flow_control, exchanged with the peer and reported",
     .store_int = store_int<&Settings::flow_control>},
    {.name = "RDMX_SRQ",
     .type = RDMX_SETTING_INT,
     .def = -1,
     .min = -1,
     .max = 1,
     .help = "1 = one shared receive pool per device or libfabric domain instead of "
             "per-connection receive buffers; 0 = per-connection; -1 = the pool in a job of "
             "more than 32 ranks, where the network fabric has one",
     .store_int = store_int<&Settings::srq>},
    {.name = "RDMX_CONNECT_TIMEOUT_MS",
     .type = RDMX_SETTING_INT,
     .def = 30000,
     .min = 100,
     .max = 3600000,
     .help = "how long a connection attempt may take before its sends fail",
     .store_int = store_int<&Settings::connect_timeout_ms>},
    {.name = "RDMX_MAX_CONNECTIONS",
     .type = RDMX_SETTING_INT,
     .def = -1,
     .min = -1,
     .max = 1 << 20,
     .help = "live connections per rank: past it the least recently used idle one is closed "
             "by agreement with its peer and opened again when next needed; -1 = half the "
             "descriptors the process may open (RLIMIT_NOFILE) beyond 256, at least 256 (0 and 1 "
             "are refused: with one, a rank talking to two peers in turn would close a "
             "connection for every message)",
     .store_int = store_int<&Settings::max_connections>,
     .check_int = [](int64_t v) { return v == -1 || v >= 2; },
     .accepted = "-1 or an integer from 2 to 1048576"},
    {.name = "RDMX_VERBOSE",
     .type = RDMX_SETTING_INT,
     .def = 0,
     .min = 0,
     .max = 3,
     .help = "log level: 0 errors, 1 warnings, 2 connections, 3 debug",
     .store_int = store_int<&Settings::verbose>},
    {.name = "RDMX_IDLE",
     .type = RDMX_SETTING_CHOICE,
     .def_text = "sleep",
     .choices = kIdle,
     .help = "what rdmx_wait does once nothing has happened for 50 us: sleep on the fabric's "
             "wait object, or keep polling (over libfabric tcp the wait object costs about 1 us "
             "per message); the Open MPI component polls unless this says sleep",
     .store_text = store_text<&Settings::idle>},
    {.name = "RDMX_RCACHE",
     .type = RDMX_SETTING_CHOICE,
     .def_text = "auto",
     .choices = kRcache,
     .help = "keep rendezvous buffers registered after their message (a registration cache), "
             "dropped when their memory is unmapped (docs/architecture.md); auto = on where "
             "the fabric reads memory by address at the time of the read (loopback, shm, "
             "libfabric tcp), off where registering pins pages (verbs) unless every release of "
             "memory is reported (the Open MPI component turns it on with opal's memory hooks)",
     .store_text = store_text<&Settings::rcache>},
    {.name = "RDMX_RCACHE_SIZE",
     .type = RDMX_SETTING_INT,
     .def = 256 << 20,
     .min = 0,
     .max = int64_t(1) << 40,
     .help = "bytes the registration cache keeps registered; beyond that the least recently "
             "used registrations no message holds are dropped",
     .store_int = store_int<&Settings::rcache_size>},
    {.name = "RDMX_AUTH",
     .type = RDMX_SETTING_CHOICE,
     .def_text = "auto",
     .choices = kAuth,
     .help = "how a connection proves job membership: secret = a MAC keyed by the job secret "
             "(RDMX_JOB_SECRET, or rdmx_set_job_secret after init; connections wait for it); "
             "job-key = keyed by the job key, a label anyone who knows it can use; auto = "
             "secret if RDMX_JOB_SECRET is set, else job-key",
     .store_text = store_text<&Settings::auth>},
    {.name = "RDMX_JOB_SECRET",
     .type = RDMX_SETTING_TEXT,
     .def_text = "",
     .help = "the job secret, shared by every rank of the job and no one else (rdmx_launch "
             "makes one per job); never printed",
     .flags = RDMX_SETTING_SECRET | RDMX_SETTING_NO_DEFAULT,
     .store_text = store_text<&Settings::job_secret>,
     .check = is_secret_hex,
     .accepted = "32 to 128 hex digits (128 to 512 bits)"},
};

}  // namespace

extern const SettingGroup kCoreSettings{"core", kDecls};

}  // namespace rdmx
