"""A garbled job log is that check's ERROR, with the log's tail, and the run goes on: every parser answers a result
or a ParseError whatever a pod printed, and options are refused before anything runs."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from gpufleet.cli.app import app
from gpufleet.verify import parsers
from gpufleet.verify import suite as suites
from gpufleet.verify.results import Status
from tests.conftest import ROOT
from tests.verify.fake_kube import FakeCluster, dcgm_document, default_logs, fio_log, fixture
from tests.verify.test_runner import result, run

HUGE = "1" * 4301  # past Python's int-from-text limit (sys.get_int_max_str_digits)
NCCL = fixture("nccl-all-reduce-2x-p5.48xlarge-aws.txt")
GARBLED: dict[str, Callable[[], str]] = {
    "nccl: a row with a malformed float": lambda: NCCL.replace("487.09", "487.0.9"),
    "nccl: a row with a 4,301-digit size": lambda: NCCL.replace("17179869184", HUGE),
    "dcgm: warnings that are a number": lambda: json.dumps(
        {"DCGM Diagnostic": {"test_categories": [{"tests": [{"name": "d", "results": [{"warnings": 5}]}]}]}}
    ),
    "dcgm: test_categories of another shape": lambda: json.dumps({"DCGM Diagnostic": {"test_categories": "x"}}),
    "dcgm: results that are strings": lambda: json.dumps(
        {"DCGM Diagnostic": {"test_categories": [{"tests": [{"name": "d", "results": ["pass"]}]}]}}
    ),
    "dcgm: a 4,301-digit number": lambda: dcgm_document().replace('"Pass"', HUGE, 1),
    "fio: an error that is text": lambda: fio_log().replace('"error" : 0', '"error" : "EIO"'),
    "fio: jobs of another shape": lambda: fio_log().replace('"jobs" : [', '"jobs" : [7, ', 1),
    "fio: a 4,301-digit number": lambda: fio_log().replace('"error" : 0', f'"error" : {HUGE}'),
}


@pytest.mark.parametrize("what", sorted(GARBLED))
def test_each_garbled_log_is_a_parse_error(what: str) -> None:
    parse = {"nccl": parsers.parse_nccl, "dcgm": parsers.parse_dcgm_diag, "fio": _fio}[what.split(":")[0]]
    text = GARBLED[what]()
    assert text != {"nccl": NCCL, "dcgm": dcgm_document(), "fio": fio_log()}[what.split(":")[0]], "nothing garbled"
    with pytest.raises(parsers.ParseError):
        parse(text)


def _fio(text: str) -> Any:
    from gpufleet.verify.workloads import _fio_sections

    return _fio_sections(text)


SOURCES = {
    "nccl": NCCL,
    "dcgm": dcgm_document(),
    "fio": fixture("fio-3.39-librbd-randread-1280k-ceph-cbt.json"),
    "exporter": fixture("dcgm-exporter-readme-metrics.txt"),
}
PARSE = {
    "nccl": parsers.parse_nccl,
    "dcgm": parsers.parse_dcgm_diag,
    "fio": parsers.parse_fio,
    "exporter": parsers.parse_exporter,
}
ODD = ["", "x", "-1", "1e999", "NaN", HUGE, "[", "{", "null", '"', "\x00", "{}", "[]", "0.0.0"]


@settings(derandomize=True, max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.sampled_from(sorted(SOURCES)),
    st.data(),
)
def test_no_mutation_of_a_real_output_escapes_a_parser_as_anything_but_a_parse_error(tool: str, data: Any) -> None:
    text = SOURCES[tool]
    cut = data.draw(st.integers(0, len(text)))
    how = data.draw(st.sampled_from(["truncate", "insert", "replace-number"]))
    odd = data.draw(st.sampled_from(ODD) | st.text(max_size=8))
    if how == "truncate":
        text = text[:cut]
    elif how == "insert":
        text = text[:cut] + odd + text[cut:]
    else:
        digits = [i for i, ch in enumerate(text) if ch.isdigit()]
        if digits:
            i = digits[cut % len(digits)]
            text = text[:i] + odd + text[i + 1 :]
    with contextlib.suppress(parsers.ParseError):
        PARSE[tool](text)


def test_a_garbled_log_is_that_checks_error_with_the_tail_and_the_run_goes_on() -> None:
    cluster = FakeCluster(pool_nodes={"h100": ["n1", "n2"]}, bound_claims={("research", "lustre")})
    garbled = {"nccl": GARBLED["nccl: a row with a 4,301-digit size"](), "dcgm": "[1, 2]\nXID tail line"}

    def logs(job: str, namespace: str) -> str:
        for prefix, text in garbled.items():
            if job.startswith(prefix):
                return text
        if job.startswith("fio"):
            return GARBLED["fio: a 4,301-digit number"]()
        return default_logs(job, namespace)

    cluster.logs = logs
    _, results = run("aws-train", cluster, categories=[suites.Category.fabric, suites.Category.gpus,
                                                       suites.Category.storage])  # fmt: skip
    multi = result(results, "fabric/use1/h100/multi-node")
    assert multi.status is Status.error and "not nccl-tests output" in multi.detail and "log:" in multi.detail
    gpus = result(results, "gpus/use1/h100")
    assert gpus.status is Status.error and gpus.evidence["nodes"]["n1"]["log"].endswith("XID tail line")
    fio = result(results, "storage/use1/lustre/h100")
    assert fio.status is Status.error and "log:" in fio.detail
    assert result(results, "fabric/use1/h100/single-node").status is not Status.error  # the run went on
    assert cluster.deleted_namespaces == ["gpufleet-verify-r1"]


@pytest.mark.parametrize(("probe", "says"), [("1.1.1.1:abc", "'abc' is not a TCP port"),
                                             ("1.1.1.1:0", "'0' is not a TCP port"),
                                             ("1.1.1.1:99999", "is not a TCP port"),
                                             ("one:443", "'one' is not an IP address"),
                                             ("1.1.1.1", "is not an IP address")])  # fmt: skip
def test_a_bad_egress_probe_is_exit_2_before_anything_runs(probe: str, says: str) -> None:
    r = CliRunner().invoke(app, ["verify", "-C", str(ROOT), "-s", "aws-train", "--plan", "--egress-probe", probe])
    assert r.exit_code == 2, r.output
    assert f"--egress-probe {probe}: " in r.stderr and says in r.stderr


@pytest.mark.parametrize(("probe", "says"), [("[fe80::1%x;id]:443", "a zone"),
                                             ("[2606:4700::1111%eth0]:443", "a zone"),
                                             ("127.0.0.1:443", "a loopback address"),
                                             ("[::1]:443", "a loopback address"),
                                             ("0.0.0.0:443", "an unspecified address"),
                                             ("224.0.0.1:443", "a multicast address"),
                                             ("169.254.169.254:80", "a link-local address"),
                                             ("[fe80::1]:443", "a link-local address"),
                                             ("[::ffff:1.1.1.1]:443", "write it as 1.1.1.1:PORT")])  # fmt: skip
def test_an_egress_probe_that_is_no_target_outside_the_pod_is_refused(probe: str, says: str) -> None:
    """Issue 29: `[fe80::1%x;id]:443` parsed (a scope id, RFC 4007) and its zone reached the probe pod's shell."""
    with pytest.raises(ValueError, match=says):
        suites.egress_target(probe)


def test_the_probe_command_quotes_its_host() -> None:
    from gpufleet.verify.tenancy_probes import connect_command

    assert connect_command("fe80::1%x;id", 443).startswith("if nc -w 5 'fe80::1%x;id' 443 </dev/null; then")


def test_an_ipv6_egress_probe_is_accepted() -> None:
    assert suites.egress_target("[2606:4700::1111]:443")[1] == 443


def test_a_dcgm_status_the_parser_does_not_know_is_an_error_and_a_diagnostic_that_ran_nothing_fails() -> None:
    from gpufleet.verify.parsers import ParseError, parse_dcgm_diag

    def doc(*statuses: str) -> str:
        results = [{"status": s, "entity_id": i} for i, s in enumerate(statuses)]
        return json.dumps(
            {"DCGM Diagnostic": {"test_categories": [{"tests": [{"name": "memory", "results": results}]}]}}
        )

    with pytest.raises(ParseError):
        parse_dcgm_diag(doc("garbled"))
    assert not parse_dcgm_diag(doc("Skip", "Not Run")).passed
    assert parse_dcgm_diag(doc("Pass", "Pass")).passed
