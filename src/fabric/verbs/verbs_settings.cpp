// The verbs backend's settings. Built in every configuration (it needs nothing from
// rdma-core), so every build documents and accepts the same settings.
#include "core/setting_decl.h"

namespace rdmx {
namespace {

constexpr SettingDecl kDecls[] = {
    {.name = "RDMX_VERBS_DEVICE",
     .type = RDMX_SETTING_TEXT,
     .def_text = "",
     .help = "verbs fabric: the RDMA device (e.g. mlx5_0, rxe1) or the IP address to use; "
             "several separated by commas, or all, for a context that uses several devices "
             "(each connection through one: a device in the peer's subnet, the nearest, the "
             "least used); empty = the device nearest the calling thread's CPUs (hwloc: PCI "
             "locality, then NUMA distance, then round-robin by RDMX_LOCAL_RANK), or without a "
             "known locality the first device with an IP address",
     .store_text = store_text<&Settings::verbs_device>},
};

}  // namespace

extern const SettingGroup kVerbsSettings{"verbs", kDecls};

}  // namespace rdmx
