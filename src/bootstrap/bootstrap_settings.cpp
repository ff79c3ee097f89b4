// The standalone bootstrap's settings (rdmx_init_bootstrap), with its own check of
// RDMX_BOOTSTRAP's host:port.
#include <cstdint>

#include "bootstrap/bootstrap_socket.h"
#include "core/setting_decl.h"

namespace rdmx {
namespace {

bool is_host_port(const std::string& v) {
  std::string host, why;
  uint16_t port = 0;
  return bootstrap::parse_host_port(v, host, port, why);
}

constexpr const char* kMethods[] = {"auto", "pmix", "socket", nullptr};

constexpr uint32_t kUnset = RDMX_SETTING_STANDALONE | RDMX_SETTING_NO_DEFAULT;

constexpr SettingDecl kDecls[] = {
    {.name = "RDMX_RANK",
     .type = RDMX_SETTING_INT,
     .def = -1,
     .min = 0,
     .max = bootstrap::kMaxRanks - 1,
     .help = "standalone bootstrap (rdmx_init_bootstrap): this process's rank",
     .flags = kUnset,
     .store_int = store_int<&Settings::rank>},
    {.name = "RDMX_SIZE",
     .type = RDMX_SETTING_INT,
     .def = -1,
     .min = 1,
     .max = bootstrap::kMaxRanks,
     .help = "standalone bootstrap: the number of ranks (rank 0 holds a connection to each)",
     .flags = kUnset,
     .store_int = store_int<&Settings::size>},
    {.name = "RDMX_BOOTSTRAP",
     .type = RDMX_SETTING_TEXT,
     .def_text = "",
     .help = "standalone bootstrap: where rank 0 listens; the other ranks connect there",
     .flags = kUnset,
     .store_text = store_text<&Settings::bootstrap>,
     .check = is_host_port,
     .accepted = "host:port with a port from 1 to 65535"},
    {.name = "RDMX_BOOTSTRAP_TIMEOUT_MS",
     .type = RDMX_SETTING_INT,
     .def = 30000,
     .min = 100,
     .max = 3600000,
     .help = "standalone bootstrap: how long any rank waits for the others before giving up",
     .flags = RDMX_SETTING_STANDALONE,
     .store_int = store_int<&Settings::bootstrap_wait_ms>},
    {.name = "RDMX_BOOTSTRAP_METHOD",
     .type = RDMX_SETTING_CHOICE,
     .def_text = "auto",
     .choices = kMethods,
     .help = "how rdmx_init_bootstrap finds the job: pmix (rank, size and addresses from a "
             "PMIx launcher: mpirun, prterun, srun --mpi=pmix), socket (RDMX_RANK, RDMX_SIZE, "
             "RDMX_BOOTSTRAP), or auto: pmix when a PMIx launcher started the process",
     .flags = RDMX_SETTING_STANDALONE,
     .store_text = store_text<&Settings::bootstrap_method>},
};

}  // namespace

extern const SettingGroup kBootstrapSettings{"bootstrap", kDecls};

}  // namespace rdmx
