// The engine instantiated over the loopback fabric, and the context that the API makes
// of it. The instantiation lives here, above both, so that the fabric knows nothing of
// the engine or the API.
#include "api/engine_context.h"
#include "fabric/loopback/loopback_fabric.h"

namespace rdmx {

template class engine::Engine<loopback::Fabric>;

std::unique_ptr<Context> make_loopback_context() {
  return std::make_unique<EngineContext<loopback::Fabric>>();
}

}  // namespace rdmx
