// Running this build's programs from a test: where they are, and a child process with
// its output captured and a time limit.
#pragma once

#include <string>
#include <vector>

namespace rdmx::test {

// A program of this build, next to tests/: src/tools/<name>.
std::string tool(const std::string& name);

struct Child {
  int status = -1;  // as a shell reports it; -1: killed after the time limit
  std::string output;
  double seconds = 0;
};

// Runs argv with extra environment variables, stdout and stderr captured together;
// killed after timeout_s seconds.
Child run_program(const std::vector<std::string>& args, const std::vector<std::string>& env,
                  int timeout_s);

}  // namespace rdmx::test
