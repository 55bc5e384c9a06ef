"""The parsers read the tools' real published outputs (fixtures/SOURCES.md) and judge them by hand-worked marks."""

from __future__ import annotations

import json

import jsonschema
import pytest

from gpufleet.verify import parsers, thresholds
from model import catalog
from model.spec import FsxLustreTier
from tests.verify.fake_kube import dcgm_document, fixture


def test_nccl_reads_aws_reference_run_busbw_at_the_largest_size() -> None:
    r = parsers.parse_nccl(fixture("nccl-all-reduce-2x-p5.48xlarge-aws.txt"))
    assert len(r.rows) == 32  # 8 B to 16 GiB, doubling; every row despite the `0: ` srun prefix
    assert r.largest.size_bytes == 17179869184
    assert r.busbw == pytest.approx(487.09)  # out-of-place busbw of the 16 GiB row
    assert r.wrong == 0 and r.avg_busbw is None  # the README elides the trailer


def test_nccl_reads_a_full_output_with_header_and_average() -> None:
    r = parsers.parse_nccl(fixture("nccl-all-reduce-2x-a3-mega.txt"))
    assert r.largest.size_bytes == 8 * 1024**3
    assert r.busbw == pytest.approx(338.82)
    assert r.avg_busbw == pytest.approx(70.742)


def test_nccl_counts_wrong_results() -> None:
    text = fixture("nccl-all-reduce-2x-a3-mega.txt").replace("338.82      0", "338.82      3")
    assert parsers.parse_nccl(text).wrong == 3


def test_nccl_output_without_rows_is_a_parse_error() -> None:
    with pytest.raises(parsers.ParseError):
        parsers.parse_nccl("# nThread 1 nGpus 1\nmpirun noticed that process rank 3 exited on signal 9\n")


def test_p5_mark_worked_by_hand_and_the_aws_reference_run_clears_it() -> None:
    # catalog p5.48xlarge: AWS's published 2-node busbw 487.09 GB/s x 0.8 = 389.67 GB/s (its line rate, "3200
    # Gigabit" / 8 = 400 GB/s, is what a type without a published run is judged against)
    assert catalog.network_gbit_per_s("3200 Gigabit") == 3200
    assert catalog.network_gbit_per_s("Up to 25 Gigabit") is None
    # p4d's DescribeInstanceTypes rate is "4x 100 Gigabit": its fabric pass mark is derived from 400 Gbit/s.
    assert catalog.instance_type("p4d.24xlarge").network_gbit_per_s == 400
    assert catalog.node_busbw("p5.48xlarge", catalog.Fraction(3200)).gb_per_s * 4 / 5 == catalog.Fraction("389.672")
    assert parsers.parse_nccl(fixture("nccl-all-reduce-2x-p5.48xlarge-aws.txt")).busbw >= 389.7
    assert thresholds.NCCL_EFFICIENCY == 0.8


def test_dcgm_4_document_fits_dcgms_schema_and_passes() -> None:
    text = dcgm_document()
    schema = json.loads(fixture("dcgm_diag_schema.json"))
    jsonschema.Draft7Validator(schema).validate(json.loads(text[text.index("{") :]))
    r = parsers.parse_dcgm_diag(text)  # the banner line dcgmi prints first is skipped
    assert r.tests == {"diagnostic": "pass"}
    assert r.passed and r.findings == []


def test_dcgm_failing_gpu_with_xid_warning_fails_and_is_surfaced() -> None:
    r = parsers.parse_dcgm_diag(dcgm_document("Fail", "GPU 3 had XID 79 (fallen off the bus)"))
    assert r.failed == ["diagnostic"] and not r.passed
    assert [(f.entity, f.xid_or_ecc) for f in r.findings] == [("3", True)]


def test_dcgm_ecc_warning_on_a_passing_test_still_fails() -> None:
    r = parsers.parse_dcgm_diag(dcgm_document("Pass", "Volatile DBE ECC errors detected on GPU 3"))
    assert r.failed == [] and not r.passed


def test_dcgm_runtime_error_is_a_parse_error() -> None:
    with pytest.raises(parsers.ParseError, match="failed to run"):
        parsers.parse_dcgm_diag('{"DCGM Diagnostic": {"runtime_error": "Unable to connect to host engine"}}')


def test_fio_reads_bandwidth_in_gb_per_s() -> None:
    r = parsers.parse_fio(fixture("fio-3.39-librbd-randread-1280k-ceph-cbt.json"))
    assert r.read_gbps == pytest.approx(0.770222986)  # bw_bytes 770222986 B/s
    assert r.write_gbps == 0 and r.errors == 0


def test_fio_result_against_the_storage_mark_worked_by_hand() -> None:
    # 0.77 GB/s per node against the 5 GB/s the estate's FSx throughput warning assumes: a fail
    need = thresholds.storage_threshold(FsxLustreTier(kind="fsx-lustre", name="t", fabric="f", capacity_gib=1200))
    assert need.value == 5.0
    assert not need.passes(parsers.parse_fio(fixture("fio-3.39-librbd-randread-1280k-ceph-cbt.json")).read_gbps)


def test_exporter_scrape_counts_gpus_from_the_readme_output() -> None:
    scrape = parsers.parse_exporter(fixture("dcgm-exporter-readme-metrics.txt"))
    assert scrape.gpus == {"0"} and scrape.xid == {}


def test_exporter_surfaces_xid() -> None:
    text = 'DCGM_FI_DEV_XID_ERRORS{gpu="2",UUID="GPU-x"} 79\nDCGM_FI_DEV_XID_ERRORS{gpu="1",UUID="GPU-y"} 0\n'
    assert parsers.parse_exporter(text).xid == {"2": 79.0}
