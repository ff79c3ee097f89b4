// The settings of device placement. Built in every configuration, with or without hwloc.
#include "core/setting_decl.h"

namespace rdmx {
namespace {

constexpr SettingDecl kDecls[] = {
    {.name = "RDMX_LOCAL_RANK",
     .type = RDMX_SETTING_INT,
     .def = -1,
     .min = 0,
     .max = (1 << 20) - 1,
     .help = "this rank's index among the job's ranks on this host, to spread ranks over "
             "equally near RDMA devices; unset = OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID or "
             "PMIX_LOCAL_RANK, else 0",
     .flags = RDMX_SETTING_NO_DEFAULT,
     .store_int = store_int<&Settings::local_rank>},
};

}  // namespace

extern const SettingGroup kTopologySettings{"topology", kDecls};

}  // namespace rdmx
