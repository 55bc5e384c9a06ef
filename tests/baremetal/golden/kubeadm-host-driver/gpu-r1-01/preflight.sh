#!/usr/bin/env bash
# gpufleet preflight for the server named in `host` below: refuse to join unless this machine matches
# the inventory. Read-only: it changes nothing on the host. Each failed check prints what it expected and what it
# found; the script exits 1 if any check failed. The tools it calls (nvidia-smi, ibstat, lsblk) are looked up on
# PATH, so tests can put fakes first on PATH without any switch that weakens a check.
# The NVIDIA driver comes with the host image (kubernetes.driver_managed_by: host): nvidia-smi must work.
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

# -- GPUs: count, model, memory and driver (nvidia-smi) ----------------------------
if ! command -v nvidia-smi >/dev/null 2>&1; then
  fail gpu.driver "nvidia-smi from an installed NVIDIA driver${driver_version:+ $driver_version}" "no nvidia-smi on PATH"
elif ! gpus="$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader,nounits 2>&1)"; then
  fail gpu.driver "nvidia-smi to list $gpu_count GPUs" "nvidia-smi failed: $(printf '%s' "$gpus" | head -n 1)"
else
  gpus="$(printf '%s\n' "$gpus" | sed '/^[[:space:]]*$/d')"
  names="$(printf '%s\n' "$gpus" | cut -d, -f1 | sed 's/^ *//; s/ *$//')"
  count="$(printf '%s\n' "$names" | sed '/^$/d' | wc -l | tr -d ' ')"
  if [ "$count" -eq "$gpu_count" ]; then
    pass gpu.count "$count GPUs"
  else
    fail gpu.count "$gpu_count GPUs" "$count GPUs"
  fi
  other_models="$(printf '%s\n' "$names" | grep -v -F -- "$gpu_name" | sort -u || true)"
  if [ -z "$other_models" ]; then
    pass gpu.model "every GPU is a $gpu_name"
  else
    fail gpu.model "every GPU a $gpu_id (name containing $gpu_name)" "$(joined "$(printf '%s\n' "$names" | sort -u)")"
  fi
  # memory.total in MiB within 5% of the catalog's gpu_memory_mib: tells A100-40GB from A100-80GB
  odd_memory="$(printf '%s\n' "$gpus" | cut -d, -f2 | awk -v want="$gpu_memory_mib" '{ m = $1 + 0; if (m < want * 0.95 || m > want * 1.05) print m " MiB" }' | sort -u)"
  if [ -z "$odd_memory" ]; then
    pass gpu.memory "about $gpu_memory_mib MiB per GPU"
  else
    fail gpu.memory "about $gpu_memory_mib MiB per GPU ($gpu_id)" "$(joined "$odd_memory")"
  fi
  drivers="$(printf '%s\n' "$gpus" | cut -d, -f3 | sed 's/^ *//; s/ *$//' | sort -u)"
  if all_are "$drivers" "$driver_version"; then
    pass gpu.driver "driver $driver_version"
  else
    fail gpu.driver "driver $driver_version" "driver $(joined "$drivers")"
  fi
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
