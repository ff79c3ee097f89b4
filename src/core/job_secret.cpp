#include "core/job_secret.h"

#include <sys/random.h>

namespace rdmx {

std::vector<uint8_t> secret_from_hex(const std::string& hex) {
  std::vector<uint8_t> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = uint8_t(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
  return out;
}

std::string random_secret_hex(size_t bytes) {
  std::vector<uint8_t> b(bytes);
  if (::getrandom(b.data(), b.size(), 0) != ssize_t(b.size())) return "";
  static const char* const kDigits = "0123456789abcdef";
  std::string s;
  for (uint8_t x : b) {
    s += kDigits[x >> 4];
    s += kDigits[x & 15];
  }
  return s;
}

}  // namespace rdmx
