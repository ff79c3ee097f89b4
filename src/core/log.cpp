#include "core/log.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <mutex>

#include "rdmx/rdmx.h"

namespace rdmx {
namespace {
std::atomic<int> g_level{0};

// The host's handler (rdmx_set_log_handler), or none: stderr.
std::mutex g_handler_mu;
rdmx_log_fn g_handler = nullptr;
void* g_handler_user = nullptr;

const char* name(LogLevel l) {
  switch (l) {
    case LogLevel::Error: return "error";
    case LogLevel::Warn: return "warning";
    case LogLevel::Info: return "info";
    case LogLevel::Debug: return "debug";
  }
  return "";
}
}  // namespace

void set_log_level(int level) { g_level.store(level, std::memory_order_relaxed); }

bool log_enabled(LogLevel level) { return int(level) <= g_level.load(std::memory_order_relaxed); }

void log_message(LogLevel level, int32_t rank, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  {
    std::lock_guard<std::mutex> g(g_handler_mu);
    if (g_handler) return g_handler(int(level), rank, buf, g_handler_user);
  }
  std::fprintf(stderr, "rdmx[%d] %s: %s\n", rank, name(level), buf);
}

}  // namespace rdmx

extern "C" void rdmx_set_log_handler(rdmx_log_fn fn, void* user) {
  std::lock_guard<std::mutex> g(rdmx::g_handler_mu);
  rdmx::g_handler = fn;
  rdmx::g_handler_user = fn ? user : nullptr;
}
