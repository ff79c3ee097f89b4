// The engine instantiated over the native verbs/rdma_cm fabric, alone and with shared
// memory for peers on this host, and the contexts the API makes of them; in a build
// without that backend, factories that say it is absent (null).
#include "api/context.h"
#include "config.h"
#if RDMX_BUILD_VERBS
#include "api/engine_context.h"
#include "fabric/composite/composite_fabric.h"
#include "fabric/verbs/verbs_fabric.h"
#endif

namespace rdmx {

#if RDMX_BUILD_VERBS
template <>
struct composite::Name<verbs::Fabric> {
  static constexpr const char* value = "verbs+shm";
};
template class engine::Engine<verbs::Fabric>;
template class engine::Engine<composite::Fabric<verbs::Fabric>>;

std::unique_ptr<Context> make_verbs_context(bool with_shm) {
  if (with_shm) return std::make_unique<EngineContext<composite::Fabric<verbs::Fabric>>>();
  return std::make_unique<EngineContext<verbs::Fabric>>();
}
#else
std::unique_ptr<Context> make_verbs_context(bool) { return nullptr; }
#endif

}  // namespace rdmx
