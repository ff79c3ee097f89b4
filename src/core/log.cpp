#include "core/log.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>

namespace rdmx {
namespace {
std::atomic<int> g_level{0};
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
  std::fprintf(stderr, "rdmx[%d] %s: %s\n", rank, name(level), buf);
}

}  // namespace rdmx
