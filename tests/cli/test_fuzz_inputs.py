"""Property: whatever mutation of the example stacks and workload file a user can make, every command that reads
it answers with exit 0, 1 or 2, never a traceback, names the file/path on exit 2, writes nothing, and answers
within seconds and a bounded amount of memory. A fixed seed keeps the suite quick and repeatable; the larger run
is benchmarks/fuzz_inputs.py.

preview and check are left to the larger run: on a valid stack they synthesize the program (seconds each); on an
invalid one they stop at the same StackFile.contents() as cost, which runs here.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.cli.badinput import WORKLOADS, invoke
from tests.cli.fuzz import ODD_VALUES, Case, cases, check_outcome, mutate, paths, run_case

QUICK = ["cost", "burst status", "size"]


QUICK_RUN = settings(
    derandomize=True,
    max_examples=25,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # a failure is reported as found, not shrunk for minutes
)


@settings(QUICK_RUN, max_examples=12)
@given(cases())
def test_mutated_stacks_never_crash_any_reader(case: Case) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for outcome in run_case(case, Path(tmp), QUICK):
            check_outcome(outcome, Path(tmp), seconds=5, peak_mb=300)


WORKLOAD_DOC: dict[str, Any] = yaml.safe_load(WORKLOADS.read_text())


@QUICK_RUN
@given(
    st.sampled_from(paths(WORKLOAD_DOC)),
    st.sampled_from(["set", "delete", "typo", "duplicate"]),
    st.sampled_from(ODD_VALUES) | st.floats() | st.integers(),
)
def test_mutated_workload_files_never_crash_size(path: tuple[Any, ...], how: str, value: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "w.yaml"
        file.write_text(yaml.safe_dump(mutate(WORKLOAD_DOC, path, how, value), allow_unicode=True))
        answer = invoke(["size", str(file)])
        text = answer.stdout + answer.stderr
        assert answer.exception is None, repr(answer.exception)
        assert "Traceback" not in text and "internal error" not in text, text[-800:]
        assert answer.code in (0, 2), answer.stderr[-800:]
        if answer.code == 2:
            assert str(file) in answer.stderr
