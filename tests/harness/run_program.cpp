#include "harness/run_program.h"

#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

namespace rdmx::test {

std::string tool(const std::string& name) {
  char self[PATH_MAX] = {};
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  std::string dir = n > 0 ? std::string(self, size_t(n)) : std::string();
  dir = dir.substr(0, dir.rfind('/'));  // .../tests
  if (dir.size() >= 6 && dir.compare(dir.size() - 6, 6, "/.libs") == 0)
    dir = dir.substr(0, dir.size() - 6);
  return dir.substr(0, dir.rfind('/')) + "/src/tools/" + name;
}

Child run_program(const std::vector<std::string>& args, const std::vector<std::string>& env,
                  int timeout_s) {
  Child out;
  int p[2];
  if (::pipe(p) != 0) return out;
  auto t0 = std::chrono::steady_clock::now();
  std::fflush(stdout);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(p[1], 1);
    ::dup2(p[1], 2);
    ::close(p[0]);
    ::close(p[1]);
    for (auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    std::_Exit(127);
  }
  ::close(p[1]);
  auto deadline = t0 + std::chrono::seconds(timeout_s);
  char buf[4096];
  for (;;) {
    pollfd pf{p[0], POLLIN, 0};
    if (::poll(&pf, 1, 100) > 0) {
      ssize_t k = ::read(p[0], buf, sizeof buf);
      if (k <= 0) break;
      out.output.append(buf, size_t(k));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      break;
    }
  }
  ::close(p[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (WIFEXITED(st)) out.status = WEXITSTATUS(st);
  if (std::chrono::steady_clock::now() > deadline) out.status = -1;
  return out;
}

}  // namespace rdmx::test
