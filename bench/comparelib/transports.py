"""The transports bench/compare runs bench/mpi_pingpong through, with the mpirun flags
each needs on Debian 12's Open MPI 4.1 (whose openmpi-mca-params.conf excludes the ofi
MTL, the ucx PML and some BTLs: a command-line --mca overrides it)."""
import os

# Where Debian's Open MPI keeps its components; rdmx's component path must list it first
# (mca_base_component_path replaces the default).
OMPI_SYSTEM_COMPONENTS = "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3"


class Transport:
    def __init__(self, name, what, mca, env=None):
        self.name = name  # short and stable: the CSV's and the plots' label
        self.what = what  # a line for the page
        self.mca = mca  # mpirun arguments: --mca pairs and -x VAR=value
        self.env = env or {}

    def mpirun_args(self):
        args = list(self.mca)
        for k, v in self.env.items():
            args += ["-x", f"{k}={v}"]
        return args


def rdmx_mca(build):
    path = f"{OMPI_SYSTEM_COMPONENTS}:{os.path.abspath(build)}/plugin/.libs"
    return ["--mca", "pml", "cm", "--mca", "mtl", "rdmx", "--mca", "mca_base_component_path", path]


def shared_memory(rdmx):
    """The on-node paths, wherever two ranks share a host."""
    return [
        Transport("rdmx-shm", "rdmx over shared memory (the default on one host)", rdmx),
        Transport("ob1-vader", "Open MPI ob1 with the vader (shared memory) BTL",
                  ["--mca", "pml", "ob1", "--mca", "btl", "self,vader"]),
    ]


def host_transports(build):
    """Two ranks on one host without an RDMA device: shared memory and tcp paths."""
    rdmx = rdmx_mca(build)
    shm, vader = shared_memory(rdmx)
    return [
        shm,
        Transport("rdmx-net", "rdmx over the network fabric (libfabric tcp): mtl_rdmx_shm off",
                  rdmx + ["--mca", "mtl_rdmx_shm", "off"]),
        vader,
        Transport("ob1-tcp", "Open MPI ob1 with the tcp BTL on lo",
                  ["--mca", "pml", "ob1", "--mca", "btl", "self,tcp",
                   "--mca", "btl_tcp_if_include", "lo"]),
        Transport("ofi-tcp", "Open MPI cm with the ofi MTL, libfabric tcp provider on lo",
                  ["--mca", "pml", "cm", "--mca", "mtl", "ofi",
                   "--mca", "mtl_ofi_provider_include", "tcp"],
                  {"FI_PROVIDER": "tcp", "FI_TCP_IFACE": "lo"}),
        Transport("ucx-tcp", "Open MPI ucx PML, UCX tcp transport on lo",
                  ["--mca", "pml", "ucx", "--mca", "pml_ucx_tls", "any",
                   "--mca", "pml_ucx_devices", "any"],
                  {"UCX_TLS": "tcp,self", "UCX_NET_DEVICES": "lo"}),
    ]


def vm_transports(build, device):
    """Inside the Soft-RoCE VM (tests/vm/): the RDMA paths over rxe, whose peers are
    known to fail there (docs/performance.md lists how); they are run and shown as failed
    with their error, not left out."""
    rdmx = rdmx_mca(build)
    return [
        Transport("rdmx-verbs", f"rdmx over its native verbs backend on {device}: mtl_rdmx_shm off",
                  rdmx + ["--mca", "mtl_rdmx_fabric", "verbs", "--mca", "mtl_rdmx_shm", "off",
                          "--mca", "mtl_rdmx_verbs_device", device]),
        Transport("rdmx-ofi-verbs", "rdmx over libfabric's verbs provider: mtl_rdmx_shm off",
                  rdmx + ["--mca", "mtl_rdmx_fabric", "ofi", "--mca", "mtl_rdmx_ofi_provider",
                          "verbs", "--mca", "mtl_rdmx_shm", "off"]),
    ] + shared_memory(rdmx) + [
        Transport("ob1-openib", "Open MPI ob1 with the openib BTL",
                  ["--mca", "pml", "ob1", "--mca", "btl", "self,openib",
                   "--mca", "btl_openib_allow_ib", "1"]),
        Transport("ofi-verbs", "Open MPI cm with the ofi MTL, verbs;ofi_rxm",
                  ["--mca", "pml", "cm", "--mca", "mtl", "ofi",
                   "--mca", "mtl_ofi_provider_include", "verbs;ofi_rxm"]),
        Transport("ucx-rc", "Open MPI ucx PML, UCX rc transport",
                  ["--mca", "pml", "ucx"], {"UCX_TLS": "rc,self"}),
    ]


def select(transports, names):
    """The transports named (comma-separated, in that order), or all of them."""
    if not names:
        return transports
    by_name = {t.name: t for t in transports}
    unknown = [n for n in names.split(",") if n not in by_name]
    if unknown:
        raise SystemExit(f"compare: unknown transport(s) {', '.join(unknown)}; "
                         f"this place has: {', '.join(by_name)}")
    return [by_name[n] for n in names.split(",")]
