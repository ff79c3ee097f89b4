# Shared by the quick-start scripts: the Debian 12 packages rdmx needs, and a way to
# install them as root or through sudo. Sourced, not run.

RDMX_BUILD_PKGS="autoconf automake libtool pkg-config make g++ git
  libibverbs-dev librdmacm-dev libfabric-dev libhwloc-dev libpmix-dev
  libopenmpi-dev openmpi-bin libgtest-dev libbenchmark-dev clang-format
  rdma-core ibverbs-providers"
RDMX_TEST_PKGS="qemu-system-x86 linux-image-amd64 busybox-static ibverbs-utils
  rdmacm-utils perftest iproute2 valgrind procps clang libclang-rt-dev slurm-wlm munge
  debootstrap python3 python3-matplotlib dpkg-dev debhelper lintian"

say() { printf '\n==> %s (%s)\n' "$*" "$(date +%T)"; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# Installs whatever of the named packages is missing (idempotent, quiet when done).
install_pkgs() {
  missing=""
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
  done
  if [ -z "$missing" ]; then
    say "packages already installed"
    return 0
  fi
  say "installing:$missing"
  as_root apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
}

# Configures (once) and builds the tree in build/.
build_tree() {
  top=$(cd "$(dirname "$0")/.." && pwd)
  cd "$top"
  if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt configure ]; then
    say "autoreconf"
    autoreconf -fi
  fi
  mkdir -p build
  cd build
  if [ ! -f Makefile ] || [ ../configure -nt Makefile ]; then
    say "configure"
    ../configure
  fi
  say "make"
  make -j"$(nproc)"
}
