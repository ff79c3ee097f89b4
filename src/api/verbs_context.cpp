// The engine instantiated over the native verbs/rdma_cm fabric, and the context the API makes of
// it; in a build without that backend, a factory that says it is absent (null).
#include "api/context.h"
#include "config.h"
#if RDMX_BUILD_VERBS
#include "api/engine_context.h"
#include "fabric/verbs/verbs_fabric.h"
#endif

namespace rdmx {

#if RDMX_BUILD_VERBS
template class engine::Engine<verbs::Fabric>;

std::unique_ptr<Context> make_verbs_context() {
  return std::make_unique<EngineContext<verbs::Fabric>>();
}
#else
std::unique_ptr<Context> make_verbs_context() { return nullptr; }
#endif

}  // namespace rdmx
