// The engine instantiated over the libfabric fabric, alone and with shared memory for
// peers on this host, and the contexts the API makes of them; in a build without that
// backend, factories that say it is absent (null).
#include "api/context.h"
#include "config.h"
#if RDMX_BUILD_OFI
#include "api/engine_context.h"
#include "fabric/composite/composite_fabric.h"
#include "fabric/ofi/ofi_fabric.h"
#endif

namespace rdmx {

#if RDMX_BUILD_OFI
template <>
struct composite::Name<ofi::Fabric> {
  static constexpr const char* value = "ofi+shm";
};
template class engine::Engine<ofi::Fabric>;
template class engine::Engine<composite::Fabric<ofi::Fabric>>;

std::unique_ptr<Context> make_ofi_context(bool with_shm) {
  if (with_shm) return std::make_unique<EngineContext<composite::Fabric<ofi::Fabric>>>();
  return std::make_unique<EngineContext<ofi::Fabric>>();
}
#else
std::unique_ptr<Context> make_ofi_context(bool) { return nullptr; }
#endif

}  // namespace rdmx
