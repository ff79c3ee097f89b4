// What RDMX_FABRIC=auto picks on this machine: native verbs when an RDMA device is
// present, else libfabric's tcp provider.
#include <memory>
#include <string>
#include <vector>

#include "api/context.h"
#include "config.h"
#if RDMX_HAVE_VERBS
#include <infiniband/verbs.h>
#endif

namespace rdmx {
namespace {
bool rdma_device_present() {
#if RDMX_HAVE_VERBS
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list) ibv_free_device_list(list);
  return n > 0;
#else
  return false;
#endif
}
}  // namespace

std::vector<std::string> rdma_device_names() {
  std::vector<std::string> names;
#if RDMX_HAVE_VERBS
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  for (int i = 0; list && i < n; ++i) names.push_back(ibv_get_device_name(list[i]));
  if (list) ibv_free_device_list(list);
#endif
  return names;
}

std::string resolve_auto_fabric(std::string& why) {
  bool device = rdma_device_present();
  if (device && make_verbs_context()) return "verbs";
  if (make_ofi_context()) return "ofi";
  why = "RDMX_FABRIC=auto found no usable fabric: ";
  why += device ? "an RDMA device is present but the verbs backend is not built"
                : "no RDMA device is present";
  why +=
      ", and the libfabric backend is not built (install libfabric-dev and reconfigure); "
      "RDMX_FABRIC=loopback works within one process";
  return "";
}

}  // namespace rdmx
