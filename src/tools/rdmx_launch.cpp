// rdmx_launch: starts N ranks of a program on this machine for rdmx's standalone
// bootstrap (RDMX_RANK, RDMX_SIZE, RDMX_BOOTSTRAP=host:port and a fresh RDMX_JOB_SECRET;
// see rdmx_init_bootstrap)
// and exits with the worst status among them. Once a rank fails, the others get a
// grace period to notice and report it, then they are stopped.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/job_secret.h"

namespace {

struct Options {
  int n = 0;
  int port = 0;
  std::string host = "127.0.0.1";
  std::string timeout_ms;
  int grace_s = 10;
  std::vector<char*> argv;  // the program and its arguments, null-terminated
};

void usage() {
  std::fprintf(stderr,
               "usage: rdmx_launch -n N [--port P] [--host H] [--timeout-ms T] [--grace S] -- "
               "program [args...]\n"
               "  starts N ranks of program with RDMX_RANK, RDMX_SIZE and "
               "RDMX_BOOTSTRAP=H:P set\n"
               "  (H defaults to 127.0.0.1, P to a free port; T sets "
               "RDMX_BOOTSTRAP_TIMEOUT_MS;\n"
               "  S: seconds the other ranks get once one has failed, default 10)\n");
}

bool to_int(const char* v, int lo, int hi, int& out) {
  char* end = nullptr;
  errno = 0;
  long x = std::strtol(v, &end, 10);
  if (errno || !*v || *end || x < lo || x > hi) return false;
  out = int(x);
  return true;
}

bool parse(int argc, char** argv, Options& o) {
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (i + 1 >= argc) {
      usage();
      return false;
    }
    const char* v = argv[++i];
    int dummy = 0;
    bool ok = true;
    if (a == "-n")
      ok = to_int(v, 1, 4096, o.n);
    else if (a == "--port")
      ok = to_int(v, 1, 65535, o.port);
    else if (a == "--host")
      o.host = v;
    else if (a == "--timeout-ms") {
      ok = to_int(v, 100, 3600000, dummy);
      o.timeout_ms = v;
    } else if (a == "--grace")
      ok = to_int(v, 0, 3600, o.grace_s);
    else {
      usage();
      return false;
    }
    if (!ok) {
      std::fprintf(stderr, "rdmx_launch: %s '%s' is out of range\n", a.c_str(), v);
      return false;
    }
  }
  if (o.n < 1 || i >= argc) {
    usage();
    return false;
  }
  for (; i < argc; ++i) o.argv.push_back(argv[i]);
  o.argv.push_back(nullptr);
  return true;
}

// A port nobody uses right now on host (the kernel picks it).
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

// Exit status as a shell reports it: the code, or 128 + the signal.
int status_code(int st) {
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return 1;
}

std::string describe(int st) {
  if (WIFEXITED(st)) return "exited with status " + std::to_string(WEXITSTATUS(st));
  if (WIFSIGNALED(st)) return std::string("was killed by signal ") + strsignal(WTERMSIG(st));
  return "stopped";
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) return 2;
  if (o.port == 0 && (o.port = free_port()) == 0) {
    std::fprintf(stderr, "rdmx_launch: no free TCP port found; give one with --port\n");
    return 2;
  }
  std::string where = (o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host) + ":" +
                      std::to_string(o.port);
  // One secret per job, handed to its ranks in their environment (only processes of
  // this user can read it there), unless the caller gave one.
  const char* given = std::getenv("RDMX_JOB_SECRET");
  std::string secret = given && *given ? given : rdmx::random_secret_hex(16);
  if (secret.empty()) {
    std::fprintf(stderr, "rdmx_launch: no system randomness for the job secret\n");
    return 2;
  }
  std::vector<pid_t> pids(size_t(o.n), -1);
  std::fflush(stdout);
  std::fflush(stderr);
  for (int r = 0; r < o.n; ++r) {
    pid_t pid = ::fork();
    if (pid < 0) {
      std::fprintf(stderr, "rdmx_launch: fork: %s\n", std::strerror(errno));
      for (pid_t p : pids)
        if (p > 0) ::kill(p, SIGKILL);
      return 1;
    }
    if (pid == 0) {
      ::setenv("RDMX_RANK", std::to_string(r).c_str(), 1);
      ::setenv("RDMX_SIZE", std::to_string(o.n).c_str(), 1);
      ::setenv("RDMX_BOOTSTRAP", where.c_str(), 1);
      ::setenv("RDMX_JOB_SECRET", secret.c_str(), 1);
      if (!o.timeout_ms.empty()) ::setenv("RDMX_BOOTSTRAP_TIMEOUT_MS", o.timeout_ms.c_str(), 1);
      ::execvp(o.argv[0], o.argv.data());
      std::fprintf(stderr, "rdmx_launch: rank %d: cannot run %s: %s\n", r, o.argv[0],
                   std::strerror(errno));
      std::_Exit(127);
    }
    pids[size_t(r)] = pid;
  }

  int worst = 0, running = o.n;
  bool failed = false;
  std::chrono::steady_clock::time_point stop_at{};
  int signal_sent = 0;
  while (running > 0) {
    int st = 0;
    pid_t pid = ::waitpid(-1, &st, WNOHANG);
    if (pid > 0) {
      int r = 0;
      while (r < o.n && pids[size_t(r)] != pid) ++r;
      if (r == o.n) continue;
      pids[size_t(r)] = -1;
      --running;
      int code = status_code(st);
      if (code != 0) {
        std::fprintf(stderr, "rdmx_launch: rank %d %s\n", r, describe(st).c_str());
        if (code > worst) worst = code;
        if (!failed) {
          failed = true;
          stop_at = std::chrono::steady_clock::now() + std::chrono::seconds(o.grace_s);
        }
      }
      continue;
    }
    if (pid < 0 && errno != EINTR) break;
    if (failed && running > 0 && std::chrono::steady_clock::now() >= stop_at) {
      int sig = signal_sent ? SIGKILL : SIGTERM;
      std::fprintf(stderr, "rdmx_launch: stopping the %d rank(s) still running\n", running);
      for (pid_t p : pids)
        if (p > 0) ::kill(p, sig);
      signal_sent = sig;
      stop_at = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return worst;
}
