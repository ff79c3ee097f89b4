// rdmx_info: what this rdmx was built with, what RDMX_FABRIC=auto picks here, and
// every RDMX_* setting with its default. "--settings --markdown" prints the settings as
// the table in README.md.
#include <cstdio>
#include <string>

#include "api/context.h"
#include "config.h"
#include "core/settings.h"
#include "fabric/shm/shm_host.h"
#include "rdmx/rdmx.h"

namespace {

// A table cell: '|' would end the cell.
std::string cell(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

void print_markdown() {
  std::printf("| variable | MCA parameter | default | accepted | what it does |\n");
  std::printf("| --- | --- | --- | --- | --- |\n");
  for (size_t i = 0; i < rdmx_setting_count(); ++i) {
    rdmx_setting_desc_t d;
    if (rdmx_setting_get(i, &d) != RDMX_OK) continue;
    std::string mca = d.flags & (RDMX_SETTING_STANDALONE | RDMX_SETTING_SECRET)
                          ? "-"
                          : "`mtl_rdmx_" + std::string(d.key) + "`";
    std::string def = d.flags & RDMX_SETTING_NO_DEFAULT ? "unset"
                      : d.default_text[0]               ? "`" + std::string(d.default_text) + "`"
                                                        : "empty";
    std::printf("| `%s` | %s | %s | %s | %s |\n", d.name, mca.c_str(), def.c_str(),
                cell(d.accepted).c_str(), cell(d.help).c_str());
  }
}

// What ranks on this host would do: talk through shared memory (RDMX_SHM), and read
// each other's buffers across memory or by copies (RDMX_SHM_READ).
void print_shm() {
  rdmx::Settings s;
  std::string err;
  s.load_from_env(err);
  const rdmx::shm::HostIdentity& h = rdmx::shm::host_identity();
  std::printf("peers on this host: %s\n",
              s.shm == "off" ? "through the network fabric (RDMX_SHM=off)"
              : s.srq && s.shm == "auto"
                  ? "through the network fabric (RDMX_SHM=auto with RDMX_SRQ=1)"
                  : "shared memory (shm)");
  std::printf("  host identity: boot id ");
  for (uint8_t b : h.boot_id) std::printf("%02x", b);
  std::printf(", network namespace %llu:%llu, uid %u%s%s\n",
              static_cast<unsigned long long>(h.netns_dev),
              static_cast<unsigned long long>(h.netns_ino), h.uid,
              s.shm_domain.empty() ? "" : ", RDMX_SHM_DOMAIN ", s.shm_domain.c_str());
  std::string why;
  bool cma = rdmx::shm::cma_allowed(why);
  std::printf("  shared-memory rendezvous reads: %s (%s)\n",
              s.shm_read == "copy" ? "copies through the segment (RDMX_SHM_READ=copy)"
              : cma                ? "process_vm_readv (cross-memory attach)"
                                   : "copies through the segment",
              why.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  std::string a1 = argc > 1 ? argv[1] : "", a2 = argc > 2 ? argv[2] : "";
  bool markdown = a2 == "--markdown";
  if (argc > 3 || (argc > 1 && a1 != "--settings") || (argc > 2 && !markdown)) {
    std::fprintf(stderr, "usage: rdmx_info [--settings [--markdown]]\n");
    return 2;
  }
  if (markdown) {
    print_markdown();
    return 0;
  }
  if (argc == 1) {
    std::printf("rdmx %s\n", PACKAGE_VERSION);
    std::printf("backends built: loopback shm%s%s\n", rdmx::make_verbs_context() ? " verbs" : "",
                rdmx::make_ofi_context() ? " ofi" : "");
    std::string why;
    std::string fabric = rdmx::resolve_auto_fabric(why);
    std::printf("RDMX_FABRIC=auto here: %s\n", fabric.empty() ? why.c_str() : fabric.c_str());
    print_shm();
    std::printf("\nsettings (environment variables):\n");
  }
  rdmx_print_settings(stdout);
  return 0;
}
