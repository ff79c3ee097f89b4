// The engine instantiated over the native verbs/rdma_cm fabric (one instance per device
// the context uses, behind the rails fabric), alone and with shared memory for peers on
// this host, and the contexts the API makes of them; in a build without that backend,
// factories that say it is absent (null).
#include "api/context.h"
#include "config.h"
#if RDMX_BUILD_VERBS
#include "api/engine_context.h"
#include "fabric/composite/composite_fabric.h"
#include "fabric/rails/rails_fabric.h"
#include "fabric/verbs/verbs_fabric.h"
#endif

namespace rdmx {

#if RDMX_BUILD_VERBS
using VerbsRails = rails::Fabric<verbs::Fabric>;
template <>
struct composite::Name<VerbsRails> {
  static constexpr const char* value = "verbs+shm";
};
template class engine::Engine<VerbsRails>;
template class engine::Engine<composite::Fabric<VerbsRails>>;

std::unique_ptr<Context> make_verbs_context(bool with_shm) {
  if (with_shm) return std::make_unique<EngineContext<composite::Fabric<VerbsRails>>>();
  return std::make_unique<EngineContext<VerbsRails>>();
}
#else
std::unique_ptr<Context> make_verbs_context(bool) { return nullptr; }
#endif

}  // namespace rdmx
