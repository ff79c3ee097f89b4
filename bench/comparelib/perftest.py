"""The raw RDMA limit from perftest, where there is an RDMA device (the Soft-RoCE VM):
ib_send_lat's typical (median) latency and ib_read_bw's average bandwidth per size, a
server and a client on this host through the device. Drawn as dashed lines."""
import re
import subprocess
import time

# perftest's MB is 2^20 bytes; bench/mpi_pingpong's is 10^6.
MIB = 1048576 / 1e6


def _pair(tool, device, addr, port, iters, timeout_s):
    """Every size from 2 bytes to 8 MiB (-a), through rdma_cm (-R) to addr."""
    base = [tool, "-d", device, "-R", "-a", "-F", "-n", str(iters), "-p", str(port)]
    server = subprocess.Popen(base, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1)
        client = subprocess.run(base + [addr], capture_output=True, text=True, timeout=timeout_s)
        return client.returncode, client.stdout + client.stderr
    except subprocess.TimeoutExpired:
        return None, f"{tool}: no result within {timeout_s} s"
    finally:
        server.kill()
        server.wait()


def limits(device, addr, max_size, timeout_s=600):
    """{'lat': {size: us}, 'bw': {size: MB/s}, 'errors': [...]}: device's limits, the
    server listening on addr (an address of that device)."""
    out = {"lat": {}, "bw": {}, "errors": []}
    rc, text = _pair("ib_send_lat", device, addr, 18525, 50, timeout_s)
    # #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%
    for m in re.finditer(r"^\s*(\d+)\s+\d+\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s", text, re.M):
        out["lat"][int(m.group(1))] = float(m.group(2))
    if not out["lat"]:
        out["errors"].append(f"ib_send_lat (status {rc}): {text.strip()[-300:]}")
    rc, text = _pair("ib_read_bw", device, addr, 18526, 20, timeout_s)
    # #bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]
    for m in re.finditer(r"^\s*(\d+)\s+\d+\s+[\d.]+\s+([\d.]+)\s+[\d.]+\s*$", text, re.M):
        out["bw"][int(m.group(1))] = float(m.group(2)) * MIB
    if not out["bw"]:
        out["errors"].append(f"ib_read_bw (status {rc}): {text.strip()[-300:]}")
    for key in ("lat", "bw"):
        out[key] = {s: v for s, v in out[key].items() if s <= max_size}
    return out
