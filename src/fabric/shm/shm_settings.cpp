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
             "shared memory: auto = yes unless the fabric is loopback; on = "
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
    {.name = "RDMX_SHM_SPLIT_READ",
     .type = RDMX_SETTING_INT,
     .def = 128 << 10,
     .min = 0,
     .max = int64_t(1) << 40,
     .help = "the smallest shared-memory rendezvous read (bytes) whose copy the sender "
             "shares: the receiver reads one half across memory while the sender's "
             "progress writes the other (process_vm_writev); the receiver takes both when "
             "the sender is busy; 0 = the receiver always copies alone",
     .store_int = store_int<&Settings::shm_split_read>},
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
