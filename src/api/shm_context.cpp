// The engine instantiated over the shared-memory fabric alone (RDMX_FABRIC=shm: every
// rank on this host), and the context the API makes of it.
#include "api/context.h"
#include "api/engine_context.h"
#include "fabric/shm/shm_fabric.h"

namespace rdmx {

template class engine::Engine<shm::Fabric>;

std::unique_ptr<Context> make_shm_context() {
  return std::make_unique<EngineContext<shm::Fabric>>();
}

}  // namespace rdmx
