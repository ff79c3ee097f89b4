// rdmx_info: what this rdmx was built with, what RDMX_FABRIC=auto picks here, and
// every RDMX_* setting with its default.
#include <cstdio>
#include <string>

#include "api/context.h"
#include "config.h"
#include "rdmx/rdmx.h"

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) != "--settings") {
    std::fprintf(stderr, "usage: rdmx_info [--settings]\n");
    return 2;
  }
  if (argc == 1) {
    std::printf("rdmx %s\n", PACKAGE_VERSION);
    std::printf("backends built: loopback%s%s\n", rdmx::make_verbs_context() ? " verbs" : "",
                rdmx::make_ofi_context() ? " ofi" : "");
    std::string why;
    std::string fabric = rdmx::resolve_auto_fabric(why);
    std::printf("RDMX_FABRIC=auto here: %s\n", fabric.empty() ? why.c_str() : fabric.c_str());
    std::printf("\nsettings (environment variables):\n");
  }
  rdmx_print_settings(stdout);
  return 0;
}
