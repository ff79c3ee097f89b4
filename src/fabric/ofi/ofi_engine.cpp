// The engine instantiated over the libfabric fabric.
#include "api/engine_context.h"
#include "fabric/ofi/ofi_fabric.h"

namespace rdmx {

template class engine::Engine<ofi::Fabric>;

std::unique_ptr<Context> make_ofi_context() {
  return std::make_unique<EngineContext<ofi::Fabric>>();
}

}  // namespace rdmx
