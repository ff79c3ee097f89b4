#include "fabric/rails/rail_path.h"

#include <arpa/inet.h>

#include <algorithm>

namespace rdmx::rails {

bool IpPrefix::contains(const IpPrefix& ip) const {
  if (family == 0 || family != ip.family) return false;
  unsigned width = family == 4 ? 32 : 128;
  unsigned n = std::min<unsigned>(bits, width);
  for (unsigned i = 0; i < n / 8; ++i)
    if (addr[i] != ip.addr[i]) return false;
  if (n % 8) {
    uint8_t mask = uint8_t(0xff << (8 - n % 8));
    if ((addr[n / 8] & mask) != (ip.addr[n / 8] & mask)) return false;
  }
  return true;
}

std::string IpPrefix::text() const {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (family == 4) inet_ntop(AF_INET, addr, buf, sizeof buf);
  if (family == 6) inet_ntop(AF_INET6, addr, buf, sizeof buf);
  return std::string(buf) + "/" + std::to_string(bits);
}

Path choose_path(const std::vector<RailView>& mine, const std::vector<IpPrefix>& peer,
                 uint64_t spread) {
  // Failed devices are no candidates while one is up (with none up, the fabric says why
  // the connection cannot be made).
  bool any_up = false;
  for (const RailView& v : mine) any_up = any_up || !v.down;
  auto usable = [&](size_t i) { return !any_up || !mine[i].down; };
  // 1. Which pairs share a subnet; without any, every pair is a candidate.
  std::vector<std::vector<size_t>> reach(mine.size());
  bool any = false;
  for (size_t i = 0; i < mine.size(); ++i)
    for (size_t j = 0; j < peer.size() && usable(i); ++j)
      if (mine[i].local.contains(peer[j])) {
        reach[i].push_back(j);
        any = true;
      }
  if (!any)
    for (size_t i = 0; i < mine.size(); ++i)
      for (size_t j = 0; j < peer.size() && usable(i); ++j) reach[i].push_back(j);
  // 2 and 3. The nearest tier among devices that reach the peer, then the least used.
  size_t best = mine.size();
  for (size_t i = 0; i < mine.size(); ++i) {
    if (reach[i].empty()) continue;
    if (best == mine.size() || mine[i].tier < mine[best].tier ||
        (mine[i].tier == mine[best].tier && mine[i].conns < mine[best].conns))
      best = i;
  }
  // 4. Between two multi-device sides rail k to rail k where the peer has that one,
  // else spread.
  const std::vector<size_t>& cands = reach[best];
  size_t j = cands[spread % cands.size()];
  if (mine.size() > 1 && std::find(cands.begin(), cands.end(), best) != cands.end()) j = best;
  return {best, j};
}

}  // namespace rdmx::rails
