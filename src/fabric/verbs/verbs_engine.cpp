// The engine instantiated over the native verbs/rdma_cm fabric.
#include "api/engine_context.h"
#include "fabric/verbs/verbs_fabric.h"

namespace rdmx {

template class engine::Engine<verbs::Fabric>;

std::unique_ptr<Context> make_verbs_context() {
  return std::make_unique<EngineContext<verbs::Fabric>>();
}

}  // namespace rdmx
