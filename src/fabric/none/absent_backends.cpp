// Factories for the backends this build leaves out: rdmx_init names them as absent.
#include "api/context.h"
#include "config.h"

namespace rdmx {

#if !RDMX_BUILD_VERBS
std::unique_ptr<Context> make_verbs_context() { return nullptr; }
#endif
#if !RDMX_BUILD_OFI
std::unique_ptr<Context> make_ofi_context() { return nullptr; }
#endif

}  // namespace rdmx
