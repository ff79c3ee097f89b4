// The shared-memory fabric's settings: whether ranks on one host use it, and how its
// READs cross from one process to the other.
#include "core/setting_decl.h"

namespace rdmx {
namespace {

constexpr const char* kShm[] = {"auto", "on", "off", nullptr};
constexpr const char* kShmRead[] = {"auto", "cma", "copy", nullptr};

constexpr SettingDecl kDecls[] = {
    {.name = "RDMX_SHM",
     .type = RDMX_SETTING_CHOICE,
     .def_text = "auto",
     .choices = kShm,
     .help = "peers on the same host (same boot id, network namespace and user) talk through "
             "shared memory: auto = yes unless RDMX_SRQ=1 or the fabric is loopback; on = "
             "yes, an error where it cannot; off = every peer goes through the network fabric",
     .store_text = store_text<&Settings::shm>},
    {.name = "RDMX_SHM_READ",
     .type = RDMX_SETTING_CHOICE,
     .def_text = "auto",
     .choices = kShmRead,
     .help = "how a shared-memory rendezvous reads the sender's buffer: cma = "
             "process_vm_readv (an error if not permitted); copy = through the shared "
             "segment, the sender's progress copying; auto = cma where permitted, else copy",
     .store_text = store_text<&Settings::shm_read>},
    {.name = "RDMX_SHM_DOMAIN",
     .type = RDMX_SETTING_TEXT,
     .def_text = "",
     .help = "ranks on one host share memory only with ranks of the same domain (any text): "
             "splits a host into groups that talk through the network fabric, as separate "
             "hosts would",
     .store_text = store_text<&Settings::shm_domain>},
};

}  // namespace

extern const SettingGroup kShmSettings{"shm", kDecls};

}  // namespace rdmx
