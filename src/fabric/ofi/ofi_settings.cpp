// The libfabric backend's settings. Built in every configuration (it needs nothing from
// libfabric), so every build documents and accepts the same settings.
#include "core/setting_decl.h"

namespace rdmx {
namespace {

constexpr SettingDecl kDecls[] = {
    {.name = "RDMX_OFI_PROVIDER",
     .type = RDMX_SETTING_TEXT,
     .def_text = "",
     .help = "libfabric provider for the ofi backend (tcp, verbs); empty = tcp",
     .store_text = store_text<&Settings::ofi_provider>},
};

}  // namespace

extern const SettingGroup kOfiSettings{"ofi", kDecls};

}  // namespace rdmx
