#!/usr/bin/env bash
# gpufleet preflight for the server named in `host` below: refuse to join unless this machine matches
# the inventory. Read-only: it changes nothing on the host. Each failed check prints what it expected and what it
# found; the script exits 1 if any check failed. The tools it calls (lspci, lsmod, ibstat, lsblk) are looked up on
# PATH, so tests can put fakes first on PATH without any switch that weakens a check.
# The GPU Operator installs NVIDIA driver $driver_version (kubernetes.driver_managed_by: operator): the host
# must have no NVIDIA driver loaded, so the GPUs are counted on the PCI bus instead of with nvidia-smi.
# Rendered from components/baremetal/templates/preflight.sh.j2. Every value from the stack arrives quoted, in the
# assignments below; the script refers to them by name only.
set -euo pipefail

host=gpu-r1-01
kubelet_kubeconfig=/etc/kubernetes/kubelet.conf
gpu_count=8
gpu_id=H100-80GB
gpu_name=H100
gpu_memory_mib=81920
driver_version=580.126.20
ib_ports=(mlx5_0 mlx5_1 mlx5_2 mlx5_3)
ib_rate_gbps=400
nvme_devices=(/dev/nvme1n1 /dev/nvme2n1)
failures=0

fail() { # fail CHECK EXPECTED FOUND
  printf 'preflight %s: FAILED %s: expected %s; found %s\n' "$host" "$1" "$2" "$3" >&2
  failures=$((failures + 1))
}

pass() { # pass CHECK WHAT
  printf 'preflight %s: ok %s: %s\n' "$host" "$1" "$2"
}

# all_are LIST WANT: LIST (one item a line) is non-empty and every item equals WANT.
all_are() {
  [ -n "$1" ] && [ -z "$(printf '%s\n' "$1" | grep -v -x -F -- "$2" || true)" ]
}

joined() { # one line per item -> "a, b, c"
  printf '%s\n' "$1" | sed '/^$/d' | paste -sd, - | sed 's/,/, /g'
}

# -- already a node? ----------------------------------------------------------------------------------------------
# The preflight re-runs on a joined server whenever its text changes (a new driver_version, a gpufleet upgrade).
# Such a server is judged as the node it is, by the join step's own test: $kubelet_kubeconfig present and
# the kubelet active. The checks below still run; only what joining changes on purpose is read differently.
node_joined=false
if [ -f "$kubelet_kubeconfig" ] && systemctl is-active --quiet kubelet; then
  node_joined=true
  pass node.joined "already a node ($kubelet_kubeconfig present, kubelet active)"
fi

# -- GPUs: count on the PCI bus (lspci), no host NVIDIA driver loaded (lsmod) -----------------------------------
# NVIDIA (vendor 10de) display controllers, class 0300 (VGA) or 0302 (3D: data-centre GPUs); NVSwitches (0680) and
# other NVIDIA functions are not GPUs. `lspci -n` prints "BUS CLASS: VENDOR:DEVICE", e.g. "17:00.0 0302: 10de:2330".
if ! command -v lspci >/dev/null 2>&1; then
  fail gpu.count "lspci (pciutils) to count $gpu_count NVIDIA GPUs" "no lspci on PATH"
elif ! devices="$(lspci -d 10de: -n 2>&1)"; then
  fail gpu.count "lspci to list $gpu_count NVIDIA GPUs" "lspci failed: $(printf '%s' "$devices" | head -n 1)"
else
  count="$(printf '%s\n' "$devices" | awk '$2 == "0300:" || $2 == "0302:"' | wc -l | tr -d ' ')"
  if [ "$count" -eq "$gpu_count" ]; then
    pass gpu.count "$count GPUs (lspci)"
  else
    fail gpu.count "$gpu_count GPUs" "$count GPUs"
  fi
fi
if ! command -v lsmod >/dev/null 2>&1; then
  fail gpu.host-driver "lsmod (kmod) to show no host NVIDIA driver" "no lsmod on PATH"
elif ! modules="$(lsmod 2>&1)"; then
  fail gpu.host-driver "lsmod to list kernel modules" "lsmod failed: $(printf '%s' "$modules" | head -n 1)"
elif printf '%s\n' "$modules" | awk '$1 == "nvidia" { found = 1 } END { exit !found }'; then  # the line "nvidia SIZE ..."
  if [ "$node_joined" = true ]; then
    pass gpu.host-driver "module nvidia loaded by the GPU Operator's driver container on this node"
  else
    fail gpu.host-driver "no host NVIDIA driver (the GPU Operator installs driver $driver_version)" "module nvidia loaded"
  fi
else
  pass gpu.host-driver "no nvidia module loaded; the GPU Operator installs driver $driver_version"
fi

# -- InfiniBand / RoCE ports: every port of every listed HCA Active and LinkUp at ib_rate_gbps (ibstat) ----
if ! command -v ibstat >/dev/null 2>&1; then
  fail ib.tools "ibstat (infiniband-diags) to check $(joined "$(printf '%s\n' "${ib_ports[@]}")")" "no ibstat on PATH"
else
  for ca in "${ib_ports[@]}"; do
    if ! out="$(ibstat "$ca" 2>&1)"; then
      fail "ib.$ca" "HCA $ca present" "ibstat $ca failed: $(printf '%s' "$out" | head -n 1)"
      continue
    fi
    states="$(printf '%s\n' "$out" | sed -n 's/^[[:space:]]*State:[[:space:]]*//p')"
    physical="$(printf '%s\n' "$out" | sed -n 's/^[[:space:]]*Physical state:[[:space:]]*//p')"
    if all_are "$states" Active; then pass "ib.$ca.state" Active; else fail "ib.$ca.state" "State: Active" "State: $(joined "$states")"; fi
    if all_are "$physical" LinkUp; then pass "ib.$ca.link" LinkUp; else fail "ib.$ca.link" "Physical state: LinkUp" "Physical state: $(joined "$physical")"; fi
    # ibstat prints "Rate: 400", "Rate: 40 (FDR10)" or "Rate: 2.5" (rdma-core infiniband-diags/ibstat.c, port_dump):
    # the number is the first word.
    rates="$(printf '%s\n' "$out" | sed -n 's/^[[:space:]]*Rate:[[:space:]]*\([^[:space:]]*\).*/\1/p')"
    if all_are "$rates" "$ib_rate_gbps"; then pass "ib.$ca.rate" "$ib_rate_gbps Gb/s"; else fail "ib.$ca.rate" "Rate: $ib_rate_gbps" "Rate: $(joined "$rates")"; fi
  done
fi

# -- IPoIB interface: the `master` of the fabric's IPoIB networks on every node (ip link) --------
# iproute2 prints an IPoIB interface's link type as `link/infiniband`; `-o` puts each interface on one line.
iface=ibp24s0
if ! command -v ip >/dev/null 2>&1; then
  fail ipoib.interface "ip (iproute2) to find IPoIB interface $iface" "no ip on PATH"
elif ! link="$(ip -o link show dev "$iface" 2>&1)"; then
  fail ipoib.interface "IPoIB interface $iface (the fabric's ipoib_interface)" "$(printf '%s' "$link" | head -n 1)"
elif ! printf '%s\n' "$link" | grep -q -F ' link/infiniband '; then
  fail ipoib.interface "$iface an IPoIB interface (link/infiniband)" "$(printf '%s\n' "$link" | grep -o 'link/[^ ]*' | head -n 1)"
else
  pass ipoib.interface "$iface is an IPoIB interface"
fi

# -- NVMe devices for scratch: each one a whole NVMe disk (lsblk) -------------------------------------------------
for dev in "${nvme_devices[@]}"; do
  found="$(lsblk -d -n -o TYPE,TRAN -- "$dev" 2>/dev/null | awk '{ print $1, $2 }' || true)"
  if [ "$found" = "disk nvme" ]; then
    pass "nvme.$dev" "NVMe disk"
  else
    fail "nvme.$dev" "an NVMe disk at $dev" "${found:-no block device}"
  fi
done

if [ "$failures" -gt 0 ]; then
  printf 'preflight %s: %d check(s) failed; refusing to join this server\n' "$host" "$failures" >&2
  exit 1
fi
printf 'preflight %s: all checks passed\n' "$host"
