// The loopback fabric's settings: the emulated device's limits.
#include "core/setting_decl.h"

namespace rdmx {
namespace {

constexpr SettingDecl kDecls[] = {
    {.name = "RDMX_LOOPBACK_DEVICE_RD_ATOM",
     .type = RDMX_SETTING_INT,
     .def = 16,
     .min = 1,
     .max = 255,
     .help = "loopback fabric: the emulated device's max_qp_rd_atom and max_qp_init_rd_atom",
     .store_int = store_int<&Settings::loopback_rd_atom>},
    {.name = "RDMX_LOOPBACK_MAX_INLINE",
     .type = RDMX_SETTING_INT,
     .def = 128,
     .min = 0,
     .max = 4096,
     .help = "loopback fabric: the emulated device's inline-send limit in bytes",
     .store_int = store_int<&Settings::loopback_max_inline>},
    {.name = "RDMX_LOOPBACK_SEND_IN_PLACE",
     .type = RDMX_SETTING_INT,
     .def = 0,
     .min = 0,
     .max = 1,
     .help = "loopback fabric: 1 = SENDs may come from unregistered memory, as over libfabric "
             "tcp (the engine then sends large eager payloads from the caller's buffer)",
     .store_int = store_int<&Settings::loopback_in_place>},
    {.name = "RDMX_LOOPBACK_SMALL_UNBUFFERED",
     .type = RDMX_SETTING_INT,
     .def = 0,
     .min = 0,
     .max = 1,
     .help = "loopback fabric: 1 = messages of up to 164 bytes arrive in the completion itself "
             "and take no receive buffer, as through shared memory",
     .store_int = store_int<&Settings::loopback_unbuffered>},
};

}  // namespace

extern const SettingGroup kLoopbackSettings{"loopback", kDecls};

}  // namespace rdmx
