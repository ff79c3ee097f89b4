// The engine instantiated over the libfabric fabric, and the context the API makes of
// it; in a build without that backend, a factory that says it is absent (null).
#include "api/context.h"
#include "config.h"
#if RDMX_BUILD_OFI
#include "api/engine_context.h"
#include "fabric/ofi/ofi_fabric.h"
#endif

namespace rdmx {

#if RDMX_BUILD_OFI
template class engine::Engine<ofi::Fabric>;

std::unique_ptr<Context> make_ofi_context() {
  return std::make_unique<EngineContext<ofi::Fabric>>();
}
#else
std::unique_ptr<Context> make_ofi_context() { return nullptr; }
#endif

}  // namespace rdmx
