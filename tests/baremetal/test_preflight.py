"""The rendered preflight, run with bash against fake nvidia-smi / lspci / lsmod / ibstat / ip / lsblk placed first
on PATH.

The fakes answer like the real tools (nvidia-smi's CSV query, `lspci -d 10de: -n` lines, lsmod's module table,
ibstat's per-CA port blocks, `ip -o link`'s one-line interfaces, lsblk's TYPE,TRAN columns); nothing in the script is switched off for the test: it
looks its tools up on PATH as it does on a server. The nvidia-smi tests render the script of a host-driver site
(kubernetes.driver_managed_by: host); the default, operator-managed site counts GPUs with lspci and refuses a
host NVIDIA driver.
"""

from __future__ import annotations

import shutil
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from model import versions
from model.spec import BaremetalSite
from tests.baremetal.helpers import SAMPLE, host_driver, nvl72, onprem_spec, scripts_for

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

H100 = "NVIDIA H100 80GB HBM3, 81559, 580.126.20"
# `lspci -d 10de: -n` on an HGX H100 board: eight 3D controllers (class 0302) and four NVSwitches (bridge, 0680)
H100_PCI = [f"{bus:02x}:00.0 0302: 10de:2330 (rev a1)" for bus in (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)]
NVSWITCH_PCI = [f"{bus:02x}:00.0 0680: 10de:22a3 (rev a1)" for bus in (0x05, 0x06, 0x07, 0x08)]
LSMOD_HEAD = "Module                  Size  Used by"
NO_NVIDIA_MODULES = [
    LSMOD_HEAD,
    "mlx5_ib               471040  0",
    "ib_uverbs             188416  1 mlx5_ib",
    "xfs                  2056192  2",
]
HOST_DRIVER_MODULES = [
    *NO_NVIDIA_MODULES,
    "nvidia_uvm           1765376  0",
    "nvidia              9801728  1 nvidia_uvm",
]
PORTS = ("mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3")
IPOIB = "ibp24s0"  # the onprem example's ipoib_interface (DGX H100's name for mlx5_0's IPoIB interface)
DISKS = ("/dev/nvme1n1", "/dev/nvme2n1")


def ibstat_block(ca: str, state: str = "Active", physical: str = "LinkUp", rate: int = 400) -> str:
    return f"""CA '{ca}'
\tCA type: MT4129
\tNumber of ports: 1
\tFirmware version: 28.39.1002
\tHardware version: 0
\tNode GUID: 0x946dae0300aa0001
\tSystem image GUID: 0x946dae0300aa0001
\tPort 1:
\t\tState: {state}
\t\tPhysical state: {physical}
\t\tRate: {rate}
\t\tBase lid: 12
\t\tLMC: 0
\t\tSM lid: 1
\t\tCapability mask: 0xa751e848
\t\tPort GUID: 0x946dae0300aa0001
\t\tLink layer: InfiniBand
"""


@dataclass
class Machine:
    """What the fake tools report about the server."""

    gpus: list[str] = field(default_factory=lambda: [H100] * 8)
    ibstat: dict[str, str] = field(default_factory=lambda: {ca: ibstat_block(ca) for ca in PORTS})
    disks: dict[str, str] = field(default_factory=lambda: dict.fromkeys(DISKS, "disk nvme"))
    has_nvidia_smi: bool = True
    pci: list[str] = field(default_factory=lambda: H100_PCI + NVSWITCH_PCI)
    modules: list[str] = field(default_factory=lambda: list(NO_NVIDIA_MODULES))
    kubelet_active: bool = False  # what `systemctl is-active --quiet kubelet` answers
    nvidia_license: str | None = None  # what `modinfo -F license nvidia` prints (None: no such module)
    files: tuple[str, ...] = ()  # host files that exist (e.g. a joined node's kubelet kubeconfig), see _on_host
    links: dict[str, str] = field(default_factory=lambda: {IPOIB: "infiniband", "eno1": "ether"})  # name -> type
    fabric: list[tuple[str, str, str, str]] = field(default_factory=list)  # per GPU: State, Status, CliqueId, UUID
    imex_active: bool = False  # what `systemctl is-active --quiet nvidia-imex` answers


def _fabric_block(state: str, status: str, clique: str, uuid: str) -> str:
    """One GPU's part of `nvidia-smi -q` on a GB200 NVL72 tray, as the NVIDIA GPU Operator issue #2511 and
    Azure/azhpc-images PR #506 quote it (the Fabric block under each GPU)."""
    return f"""GPU 00000008:01:00.0
    Product Name                          : NVIDIA GB200
    Fabric
        State                             : {state}
        Status                            : {status}
        CliqueId                          : {clique}
        ClusterUUID                       : {uuid}
        Health
            Summary                       : Healthy
    Inforom Version
"""


def host_driver_preflight() -> str:
    return scripts_for(onprem_spec(host_driver)).preflight.text


def rate_preflight(gbps: int) -> str:
    """The host-driver preflight of a server whose inventory declares its InfiniBand link rate."""

    def rate(estate: dict[str, Any]) -> None:
        estate["sites"][0]["inventory"][0]["ib_rate_gbps"] = gbps
        host_driver(estate)

    return scripts_for(onprem_spec(rate)).preflight.text


def operator_preflight() -> str:
    return scripts_for(onprem_spec()).preflight.text


def _tool(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def run_preflight(tmp_path: Path, machine: Machine, script: str | None = None) -> subprocess.CompletedProcess[str]:
    bin_dir, data = tmp_path / "bin", tmp_path / "data"
    bin_dir.mkdir(parents=True)
    data.mkdir(parents=True)
    if machine.has_nvidia_smi:
        (data / "gpus.csv").write_text("".join(g + "\n" for g in machine.gpus))
        (data / "query").write_text("".join(_fabric_block(*f) for f in machine.fabric))
        _tool(bin_dir, "nvidia-smi", f'[ "$1" = "-q" ] && exec cat "{data}/query"\ncat "{data}/gpus.csv"\n')
    # lspci -d 10de: -n: only answers the vendor filter the script uses (anything else is a test bug)
    (data / "lspci").write_text("".join(line + "\n" for line in machine.pci))
    _tool(
        bin_dir,
        "lspci",
        f'[ "$*" = "-d 10de: -n" ] || {{ echo "fake lspci: unexpected $*" >&2; exit 2; }}\ncat "{data}/lspci"\n',
    )
    (data / "lsmod").write_text("".join(line + "\n" for line in machine.modules))
    _tool(bin_dir, "lsmod", f'cat "{data}/lsmod"\n')
    for ca, text in machine.ibstat.items():
        (data / f"ibstat-{ca}").write_text(text)
    _tool(
        bin_dir,
        "ibstat",
        f'f="{data}/ibstat-$1"\n[ -f "$f" ] || {{ echo "ibpanic: [1] main: stat of IB device \'$1\' failed: No such file" >&2; exit 255; }}\ncat "$f"\n',
    )
    for dev, answer in machine.disks.items():
        (data / ("lsblk" + dev.replace("/", "_"))).write_text(answer + "\n")
    # lsblk -d -n -o TYPE,TRAN -- DEVICE: the device is the last argument
    _tool(
        bin_dir,
        "lsblk",
        f'for last; do :; done\nf="{data}/lsblk$(echo "$last" | tr / _)"\n[ -f "$f" ] || {{ echo "lsblk: $last: not a block device" >&2; exit 32; }}\ncat "$f"\n',
    )
    license_answer = (
        f"echo {machine.nvidia_license!r}\n"
        if machine.nvidia_license is not None
        else 'echo "modinfo: ERROR: Module nvidia not found." >&2; exit 1\n'
    )
    _tool(
        bin_dir,
        "modinfo",
        '[ "$*" = "-F license nvidia" ] || { echo "fake modinfo: unexpected $*" >&2; exit 2; }\n' + license_answer,
    )
    _tool(
        bin_dir,
        "systemctl",
        f'[ "$*" = "is-active --quiet nvidia-imex" ] && exit {0 if machine.imex_active else 3}\n'
        '[ "$*" = "is-active --quiet kubelet" ] || { echo "fake systemctl: unexpected $*" >&2; exit 2; }\n'
        f"exit {0 if machine.kubelet_active else 3}\n",
    )
    # ip -o link show dev NAME: iproute2's one-line form ("IDX: NAME: <FLAGS> ... \    link/TYPE ADDR brd BRD"), or
    # its message for an unknown device (exit 1)
    for name, kind in machine.links.items():
        (data / f"link-{name}").write_text(
            f"6: {name}: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 4092 qdisc mq state UP mode DEFAULT group default "
            f"qlen 256\\    link/{kind} 00:00:10:49:fe:80:00:00:00:00:00:00:94:6d:ae:03:00:aa:00:01 brd "
            "00:ff:ff:ff:ff:12:40:1b:ff:ff:00:00:00:00:00:00:ff:ff:ff:ff\n"
        )
    _tool(
        bin_dir,
        "ip",
        '[ "$1 $2 $3 $4" = "-o link show dev" ] || { echo "fake ip: unexpected $*" >&2; exit 2; }\n'
        f'f="{data}/link-$5"\n[ -f "$f" ] || {{ echo "Device \\"$5\\" does not exist." >&2; exit 1; }}\ncat "$f"\n',
    )
    path = tmp_path / "preflight.sh"
    path.write_text(script if script is not None else host_driver_preflight())
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "LC_ALL": "C"}
    return subprocess.run(_on_host(tmp_path, machine.files, path), capture_output=True, text=True, env=env, timeout=30)


def _on_host(tmp_path: Path, files: tuple[str, ...], script: Path) -> list[str]:
    """The command running `script`; with `files`, inside a private mount namespace whose /etc and /var/lib are
    overlays holding those files (the host's own directories stay untouched): the script tests real paths."""
    if not files:
        return ["bash", str(script)]
    setup = ["set -e", "mount --make-rprivate /"]
    for n, top in enumerate(("/etc", "/var/lib")):
        upper, work = tmp_path / f"upper{n}", tmp_path / f"work{n}"
        upper.mkdir()
        work.mkdir()
        setup.append(f"mount -t overlay overlay -o lowerdir={top},upperdir={upper},workdir={work} {top}")
    setup += [f'mkdir -p "$(dirname {f})" && echo "apiVersion: v1" > {f}' for f in files]
    setup.append(f"exec bash {script}")
    return ["unshare", "--mount", "sh", "-c", "; ".join(setup)]


def _can_overlay_host_files() -> bool:
    probe = (
        subprocess.run(
            ["unshare", "--mount", "sh", "-c", "mount --make-rprivate / && mount -t tmpfs tmpfs /mnt"],
            capture_output=True,
            timeout=10,
        )
        if shutil.which("unshare")
        else None
    )
    return probe is not None and probe.returncode == 0


needs_mount_namespace = pytest.mark.skipif(
    not _can_overlay_host_files(), reason="needs unshare --mount (root) to lay a joined node's files"
)


def failed_checks(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line.split("FAILED ", 1)[1] for line in result.stderr.splitlines() if "FAILED " in line]


def test_matching_server_passes_every_check(tmp_path: Path) -> None:
    result = run_preflight(tmp_path, Machine())
    assert result.returncode == 0, result.stderr
    assert f"preflight {SAMPLE}: all checks passed" in result.stdout
    assert failed_checks(result) == []
    checks = (
        "gpu.count",
        "gpu.model",
        "gpu.memory",
        "gpu.driver",
        "ib.mlx5_3.state",
        "ipoib.interface",
        "nvme./dev/nvme2n1",
    )
    for check in checks:
        assert f"ok {check}:" in result.stdout


def test_server_with_seven_gpus_is_refused(tmp_path: Path) -> None:
    result = run_preflight(tmp_path, Machine(gpus=[H100] * 7))
    assert result.returncode == 1
    assert failed_checks(result) == ["gpu.count: expected 8 GPUs; found 7 GPUs"]
    assert "refusing to join this server" in result.stderr


def test_server_with_other_gpu_model_is_refused(tmp_path: Path) -> None:
    a100 = "NVIDIA A100-SXM4-40GB, 40960, 580.126.20"
    result = run_preflight(tmp_path, Machine(gpus=[a100] * 8))
    assert result.returncode == 1
    assert failed_checks(result) == [
        "gpu.model: expected every GPU a H100-80GB (name containing H100); found NVIDIA A100-SXM4-40GB",
        "gpu.memory: expected about 81920 MiB per GPU (H100-80GB); found 40960 MiB",
    ]


def test_server_with_other_driver_is_refused(tmp_path: Path) -> None:
    old = H100.replace("580.126.20", "570.86.15")
    result = run_preflight(tmp_path, Machine(gpus=[H100] * 7 + [old]))
    assert result.returncode == 1
    assert failed_checks(result) == ["gpu.driver: expected driver 580.126.20; found driver 570.86.15, 580.126.20"]


def test_server_without_a_driver_is_refused(tmp_path: Path) -> None:
    if any(Path(d, "nvidia-smi").exists() for d in ("/usr/bin", "/bin")):
        pytest.skip("this machine has a real nvidia-smi on /usr/bin or /bin")
    result = run_preflight(tmp_path, Machine(has_nvidia_smi=False))
    assert result.returncode == 1
    assert failed_checks(result) == [
        "gpu.driver: expected nvidia-smi from an installed NVIDIA driver 580.126.20; found no nvidia-smi on PATH"
    ]


def test_server_with_a_port_down_is_refused(tmp_path: Path) -> None:
    machine = Machine()
    machine.ibstat["mlx5_2"] = ibstat_block("mlx5_2", state="Down", physical="Polling")
    result = run_preflight(tmp_path, machine)
    assert result.returncode == 1
    assert failed_checks(result) == [
        "ib.mlx5_2.state: expected State: Active; found State: Down",
        "ib.mlx5_2.link: expected Physical state: LinkUp; found Physical state: Polling",
    ]


def test_server_missing_an_hca_is_refused(tmp_path: Path) -> None:
    machine = Machine()
    del machine.ibstat["mlx5_3"]
    result = run_preflight(tmp_path, machine)
    assert result.returncode == 1
    [failure] = failed_checks(result)
    assert failure.startswith("ib.mlx5_3: expected HCA mlx5_3 present; found ibstat mlx5_3 failed: ibpanic")


def test_server_with_a_missing_or_non_nvme_disk_is_refused(tmp_path: Path) -> None:
    machine = Machine(disks={"/dev/nvme1n1": "disk nvme"})  # /dev/nvme2n1 absent
    result = run_preflight(tmp_path, machine)
    assert result.returncode == 1
    assert failed_checks(result) == ["nvme./dev/nvme2n1: expected an NVMe disk at /dev/nvme2n1; found no block device"]
    sata = Machine(disks={"/dev/nvme1n1": "disk nvme", "/dev/nvme2n1": "disk sata"})
    assert failed_checks(run_preflight(tmp_path / "sata", sata)) == [
        "nvme./dev/nvme2n1: expected an NVMe disk at /dev/nvme2n1; found disk sata"
    ]


def test_link_rate_is_checked_when_the_inventory_sets_one(tmp_path: Path) -> None:
    script = rate_preflight(400)
    machine = Machine()
    machine.ibstat["mlx5_1"] = ibstat_block("mlx5_1", rate=200)
    result = run_preflight(tmp_path, machine, script)
    assert result.returncode == 1
    assert failed_checks(result) == ["ib.mlx5_1.rate: expected Rate: 400; found Rate: 200"]


# ibstat's own output (rdma-core v64.0, commit f272237493ef309984036f7b85655e11104c61c8, infiniband-diags/ibstat.c:
# ca_dump and port_dump): the CA block, then per port "State", "Physical state" and "Rate" ("%d", "%d (FDR10)" on
# an FDR10 link, "2.5" for 1x SDR). rdma-core's main branch after v64.0 (commit 9a645e43, "ibstat: show effective
# port bandwidth using ibv_query_port_speed()") adds an "Effective speed: %g" line after Rate. Values as recorded on
# a ConnectX-7 (MT4129, firmware 28.40.1000, Rate 200, the HDR port of the HPC guide this test's shape follows).
def ibstat_recorded(ca: str, ports: list[tuple[str, str, str]], effective: bool = False) -> str:
    head = (
        f"CA '{ca}'\n\tCA type: MT4129\n\tNumber of ports: {len(ports)}\n\tFirmware version: 28.40.1000\n"
        "\tHardware version: 0\n\tNode GUID: 0xc470bd0300cf4964\n\tSystem image GUID: 0xc470bd0300cf4964\n"
    )
    body = ""
    for n, (state, physical, rate) in enumerate(ports, start=1):
        body += f"\tPort {n}:\n\t\tState: {state}\n\t\tPhysical state: {physical}\n\t\tRate: {rate}\n"
        if effective:
            body += f"\t\tEffective speed: {rate.split()[0]}\n"
        body += (
            "\t\tBase lid: 48\n\t\tLMC: 0\n\t\tSM lid: 48\n\t\tCapability mask: 0xa751e84a\n"
            "\t\tPort GUID: 0xc470bd0300cf4964\n\t\tLink layer: InfiniBand\n"
        )
    return head + body


@pytest.mark.parametrize(
    ("ports", "effective", "failed"),
    [
        ([("Active", "LinkUp", "200")], False, []),
        ([("Active", "LinkUp", "200")], True, []),  # rdma-core after v64.0
        ([("Active", "LinkUp", "200"), ("Active", "LinkUp", "200")], False, []),  # a two-port HCA
        ([("Active", "LinkUp", "100")], False, ["ib.mlx5_0.rate: expected Rate: 200; found Rate: 100"]),
        (
            [("Active", "LinkUp", "200"), ("Down", "Polling", "10")],
            False,
            [
                "ib.mlx5_0.state: expected State: Active; found State: Active, Down",
                "ib.mlx5_0.link: expected Physical state: LinkUp; found Physical state: LinkUp, Polling",
                "ib.mlx5_0.rate: expected Rate: 200; found Rate: 200, 10",
            ],
        ),
        (
            [("Initializing", "LinkUp", "200")],
            False,
            ["ib.mlx5_0.state: expected State: Active; found State: Initializing"],
        ),  # no subnet manager yet
    ],
)
def test_ibstat_as_rdma_core_prints_it(
    tmp_path: Path, ports: list[tuple[str, str, str]], effective: bool, failed: list[str]
) -> None:
    script = rate_preflight(200)
    machine = Machine()
    machine.ibstat = {ca: ibstat_recorded(ca, [("Active", "LinkUp", "200")]) for ca in PORTS}
    machine.ibstat["mlx5_0"] = ibstat_recorded("mlx5_0", ports, effective)
    result = run_preflight(tmp_path, machine, script)
    assert failed_checks(result) == failed
    assert result.returncode == (1 if failed else 0)


def test_an_fdr10_rate_is_read_as_its_number(tmp_path: Path) -> None:
    script = rate_preflight(40)
    machine = Machine()
    machine.ibstat = {ca: ibstat_recorded(ca, [("Active", "LinkUp", "40 (FDR10)")]) for ca in PORTS}
    result = run_preflight(tmp_path, machine, script)
    assert failed_checks(result) == [] and result.returncode == 0


def test_every_failed_check_is_reported_not_just_the_first(tmp_path: Path) -> None:
    machine = Machine(gpus=[H100] * 4, disks={})
    machine.ibstat["mlx5_0"] = ibstat_block("mlx5_0", state="Initializing")
    result = run_preflight(tmp_path, machine)
    assert result.returncode == 1
    checks = [f.split(":", 1)[0] for f in failed_checks(result)]
    assert checks == ["gpu.count", "ib.mlx5_0.state", "nvme./dev/nvme1n1", "nvme./dev/nvme2n1"]
    assert "4 check(s) failed" in result.stderr


def test_preflight_has_no_switch_that_turns_checks_off() -> None:
    # the script finds the fakes through PATH alone: no variable exists to skip or stub a check
    for text in (host_driver_preflight(), operator_preflight()):
        assert "GPUFLEET_" not in text and "SKIP" not in text.upper()


# -- operator-managed driver (the default): GPUs counted on the PCI bus, no host driver allowed ----------------


def test_operator_site_passes_a_matching_server_without_ahost_driver(tmp_path: Path) -> None:
    # no nvidia-smi at all: the GPU Operator has not installed the driver yet
    result = run_preflight(tmp_path, Machine(has_nvidia_smi=False), operator_preflight())
    assert result.returncode == 0, result.stderr
    assert failed_checks(result) == []
    assert "ok gpu.count: 8 GPUs (lspci)" in result.stdout  # the four NVSwitches are not counted
    assert "ok gpu.host-driver: no nvidia module loaded; the GPU Operator installs driver 580.126.20" in result.stdout
    for check in ("ib.mlx5_3.state", "ib.mlx5_0.link", "nvme./dev/nvme1n1", "nvme./dev/nvme2n1"):
        assert f"ok {check}:" in result.stdout
    assert "command -v nvidia-smi" not in operator_preflight()
    assert f"preflight {SAMPLE}: all checks passed" in result.stdout


def test_operator_site_refuses_a_server_with_seven_gpus_on_the_pci_bus(tmp_path: Path) -> None:
    result = run_preflight(tmp_path, Machine(pci=H100_PCI[:7] + NVSWITCH_PCI), operator_preflight())
    assert result.returncode == 1
    assert failed_checks(result) == ["gpu.count: expected 8 GPUs; found 7 GPUs"]
    assert "refusing to join this server" in result.stderr


def test_operator_site_counts_vga_class_gpus_but_not_other_nvidia_functions(tmp_path: Path) -> None:
    # a VGA-class (0300) GPU counts; an NVIDIA audio function (0403) does not
    pci = [*H100_PCI[:7], "db:00.0 0300: 10de:2236 (rev a1)", "db:00.1 0403: 10de:1aef (rev a1)"]
    result = run_preflight(tmp_path, Machine(pci=pci), operator_preflight())
    assert result.returncode == 0, result.stderr
    assert "ok gpu.count: 8 GPUs (lspci)" in result.stdout


def test_operator_site_refuses_a_server_with_the_host_nvidia_module_loaded(tmp_path: Path) -> None:
    result = run_preflight(tmp_path, Machine(modules=HOST_DRIVER_MODULES), operator_preflight())
    assert result.returncode == 1
    assert failed_checks(result) == [
        "gpu.host-driver: expected no host NVIDIA driver (the GPU Operator installs driver 580.126.20); "
        "found module nvidia loaded"
    ]
    assert f"preflight {SAMPLE}: 1 check(s) failed; refusing to join this server" in result.stderr


def test_operator_site_ignores_modules_that_only_start_with_nvidia(tmp_path: Path) -> None:
    # nvidiafb (the legacy framebuffer driver) is not the NVIDIA driver: the check matches the module `nvidia` only
    modules = [*NO_NVIDIA_MODULES, "nvidiafb               49152  0"]
    result = run_preflight(tmp_path, Machine(modules=modules), operator_preflight())
    assert result.returncode == 0, result.stderr


def test_operator_site_names_the_pinned_driver_when_the_site_does_not_pin_one() -> None:
    def unpin(estate: dict[str, Any]) -> None:
        del estate["sites"][0]["kubernetes"]["driver_version"]

    text = scripts_for(onprem_spec(unpin)).preflight.text
    assert f"\ndriver_version={versions.GPU_DRIVER}\n" in text
    assert "the GPU Operator installs driver $driver_version" in text


def test_operator_site_without_lsmod_is_refused_not_waved_through(tmp_path: Path) -> None:
    script = operator_preflight().replace("command -v lsmod", "command -v lsmod-absent-on-this-host")
    result = run_preflight(tmp_path, Machine(), script)
    assert result.returncode == 1
    assert failed_checks(result) == [
        "gpu.host-driver: expected lsmod (kmod) to show no host NVIDIA driver; found no lsmod on PATH"
    ]


# -- a server that has already joined (the preflight re-runs when its text changes, e.g. a new driver_version) --

KUBEADM_KUBELET_CONF = "/etc/kubernetes/kubelet.conf"  # join-kubeadm.sh.j2's own "already a node" test


@needs_mount_namespace
def test_operator_site_judges_a_joined_server_as_joined_after_a_driver_upgrade(tmp_path: Path) -> None:
    """Raising kubernetes.driver_version changes the preflight text, so pulumi-command re-runs it on every
    joined server, where the GPU Operator's driver container has loaded the nvidia module. Such a server is a
    node (its kubelet kubeconfig present, kubelet active: the join step's test), not a host with its own driver."""

    def upgrade(estate: dict[str, Any]) -> None:
        estate["sites"][0]["kubernetes"]["driver_version"] = "595.91.07"

    script = scripts_for(onprem_spec(upgrade)).preflight.text
    assert script != operator_preflight()  # the re-run: the text changed with the driver version
    joined = Machine(modules=HOST_DRIVER_MODULES, kubelet_active=True, files=(KUBEADM_KUBELET_CONF,))
    result = run_preflight(tmp_path, joined, script)
    assert result.returncode == 0, result.stderr
    assert "ok node.joined: already a node (/etc/kubernetes/kubelet.conf present, kubelet active)" in result.stdout
    assert "ok gpu.host-driver: module nvidia loaded by the GPU Operator's driver container" in result.stdout
    assert "ok gpu.count: 8 GPUs (lspci)" in result.stdout  # the other checks still run


@needs_mount_namespace
def test_operator_site_still_refuses_a_host_driver_on_a_server_that_is_not_a_node(tmp_path: Path) -> None:
    # a kubelet.conf left behind without a running kubelet is not a node (the join step would join it again)
    stale = Machine(modules=HOST_DRIVER_MODULES, kubelet_active=False, files=(KUBEADM_KUBELET_CONF,))
    result = run_preflight(tmp_path, stale, operator_preflight())
    assert result.returncode == 1
    assert [c.split(":")[0] for c in failed_checks(result)] == ["gpu.host-driver"]
    assert "node.joined" not in result.stdout


def test_operator_site_without_a_kubelet_conf_is_not_judged_joined(tmp_path: Path) -> None:
    # an active kubelet alone (no kubeconfig from a join) is not this cluster's node
    result = run_preflight(tmp_path, Machine(modules=HOST_DRIVER_MODULES, kubelet_active=True), operator_preflight())
    assert result.returncode == 1
    assert "node.joined" not in result.stdout


def test_preflight_and_join_decide_joined_by_the_same_test() -> None:
    scripts = scripts_for(onprem_spec())
    test = '[ -f "$kubelet_kubeconfig" ] && systemctl is-active --quiet kubelet'
    path = f"\nkubelet_kubeconfig={KUBEADM_KUBELET_CONF}\n"
    assert test in scripts.preflight.text and test in scripts.join.text
    assert path in scripts.preflight.text and path in scripts.join.text


# -- GPUDirect RDMA on a host-driver site (kubernetes.gpudirect_rdma: dma-buf) ---------------------------------

OPEN_LICENSE = "Dual MIT/GPL"  # MODULE_LICENSE of NVIDIA/open-gpu-kernel-modules kernel-open/nvidia/nv.c


def dma_buf_preflight(hostname: str = SAMPLE) -> str:
    def dma_buf(estate: dict[str, Any]) -> None:
        host_driver(estate)
        estate["sites"][0]["kubernetes"]["gpudirect_rdma"] = "dma-buf"

    return scripts_for(onprem_spec(dma_buf), hostname).preflight.text


def test_dma_buf_site_accepts_the_open_kernel_module(tmp_path: Path) -> None:
    result = run_preflight(tmp_path, Machine(nvidia_license=OPEN_LICENSE), dma_buf_preflight())
    assert result.returncode == 0, result.stderr
    assert "ok gpu.dma-buf: open kernel module (DMA-BUF for GPUDirect RDMA)" in result.stdout


def test_dma_buf_site_refuses_the_proprietary_module(tmp_path: Path) -> None:
    result = run_preflight(tmp_path, Machine(nvidia_license="NVIDIA"), dma_buf_preflight())
    assert result.returncode == 1
    assert failed_checks(result) == [
        "gpu.dma-buf: expected NVIDIA's open kernel module (license Dual MIT/GPL) for GPUDirect RDMA by DMA-BUF; "
        "found license NVIDIA"
    ]


def test_dma_buf_is_checked_only_on_fabric_pools() -> None:
    # gpu-r2-03 is in the `dev` pool, which is off the fabric: no RDMA there, nothing to check
    assert "modinfo -F license nvidia" in dma_buf_preflight()
    assert "modinfo" not in dma_buf_preflight("gpu-r2-03")
    assert "modinfo" not in operator_preflight()  # the operator's fabric driver brings nvidia-peermem


# -- the IPoIB interface the fabric's IPoIBNetworks name as `master` ------------------------------------------------


def test_server_without_the_fabrics_ipoib_interface_is_refused(tmp_path: Path) -> None:
    result = run_preflight(tmp_path, Machine(links={"ib0": "infiniband"}))  # an `ib0`, but not the fabric's name
    assert result.returncode == 1
    assert failed_checks(result) == [
        f'ipoib.interface: expected IPoIB interface {IPOIB} (the fabric\'s ipoib_interface); found Device "{IPOIB}" '
        "does not exist."
    ]


def test_an_ethernet_interface_by_the_ipoib_name_is_refused(tmp_path: Path) -> None:
    result = run_preflight(tmp_path, Machine(links={IPOIB: "ether"}), operator_preflight())
    assert result.returncode == 1
    assert failed_checks(result) == [
        f"ipoib.interface: expected {IPOIB} an IPoIB interface (link/infiniband); found link/ether"
    ]


def test_the_ipoib_interface_is_checked_only_on_servers_of_an_ipoib_fabric() -> None:
    assert "ipoib.interface" not in scripts_for(onprem_spec(), "gpu-r2-03").preflight.text  # the dev pool: no fabric

    def no_ipoib(estate: dict[str, Any]) -> None:
        estate["sites"][0]["fabrics"][0]["ipoib"] = False

    assert "ipoib.interface" not in scripts_for(onprem_spec(no_ipoib)).preflight.text
    assert f"iface={IPOIB}\n" in operator_preflight()


UUID = "9c6f5af3-53bf-49b5-a436-b66766c413c3"
GB200 = "NVIDIA GB200, 189471, 580.126.20"


def _nvl72_machine(**changes: Any) -> Machine:
    fabric = [("Completed", "Success", "4026", UUID)] * 4
    return Machine(**{"gpus": [GB200] * 4, "pci": [], "fabric": fabric, **changes})


def test_an_nvl72_server_whose_gpus_joined_the_fabric_and_whose_imex_service_is_off_passes(tmp_path: Path) -> None:
    out = run_preflight(tmp_path, _nvl72_machine(), scripts_for(onprem_spec(nvl72)).preflight.text)
    assert out.returncode == 0, out.stderr
    assert (
        f"ok nvlink.fabric: 4 GPUs registered with NVLink fabric {UUID}.4026 (inventory domain rack-a1-nvl)"
        in out.stdout
    )
    assert "ok nvlink.imex-service" in out.stdout


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"imex_active": True}, "FAILED nvlink.imex-service"),
        # Azure/azhpc-images PR #506: State Completed but Status Insufficient Resources, CliqueId 0, zero UUID
        ({"fabric": [("Completed", "Success", "4026", UUID)] * 3
          + [("Completed", "Insufficient Resources", "0", "00000000-0000-0000-0000-000000000000")]},
         "FAILED nvlink.fabric"),
        ({"fabric": [("In Progress", "N/A", "N/A", "N/A")] * 4}, "FAILED nvlink.fabric"),  # gpu-operator #2511
        ({"fabric": [("Completed", "Success", "4026", UUID)] * 2 + [("Completed", "Success", "4027", UUID)] * 2},
         "FAILED nvlink.fabric"),  # two cliques on one tray
    ],
)  # fmt: skip
def test_an_nvl72_server_off_the_fabric_or_running_its_own_imex_is_refused(
    tmp_path: Path, changes: dict[str, Any], expected: str
) -> None:
    out = run_preflight(tmp_path, _nvl72_machine(**changes), scripts_for(onprem_spec(nvl72)).preflight.text)
    assert out.returncode == 1 and expected in out.stderr, out.stdout + out.stderr


def test_servers_of_an_nvlink_pool_name_their_domain_and_no_domain_outgrows_the_pool() -> None:
    from model.load import SpecError

    def unnamed(estate: dict[str, Any]) -> None:
        nvl72(estate)
        del estate["sites"][0]["inventory"][0]["nvlink_domain"]

    with pytest.raises(SpecError, match=r"inventory\[0\]\.nvlink_domain: server .* name the NVLink domain"):
        onprem_spec(unnamed)

    def crowded(estate: dict[str, Any]) -> None:
        nvl72(estate)
        estate["sites"][0]["node_pools"][0]["nvlink_domain_nodes"] = 2

    spec = onprem_spec(nvl72)
    site = spec.sites[0]
    assert isinstance(site, BaremetalSite) and len(spec.pool_servers(site, site.node_pools[0])) > 2
    with pytest.raises(SpecError, match=r"nvlink_domain_nodes: NVLink domain rack-a1-nvl holds \d+ servers"):
        onprem_spec(crowded)
