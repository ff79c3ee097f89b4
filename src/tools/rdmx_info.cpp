// rdmx_info: what this rdmx was built with, what RDMX_FABRIC=auto picks here, and
// every RDMX_* setting with its default. "--settings --markdown" prints the settings as
// the table in README.md.
#include <cstdio>
#include <string>

#include "api/context.h"
#include "config.h"
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
    std::string mca =
        d.flags & RDMX_SETTING_STANDALONE ? "-" : "`mtl_rdmx_" + std::string(d.key) + "`";
    std::string def = d.flags & RDMX_SETTING_NO_DEFAULT ? "unset"
                      : d.default_text[0]               ? "`" + std::string(d.default_text) + "`"
                                                        : "empty";
    std::printf("| `%s` | %s | %s | %s | %s |\n", d.name, mca.c_str(), def.c_str(),
                cell(d.accepted).c_str(), cell(d.help).c_str());
  }
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
