"""The Mermaid diagram of an estate: every pool and tenant, quota edges, fabrics, storage and burst; safe syntax.

When GPUFLEET_MERMAID_DIR names a directory whose node_modules holds `mermaid` and `jsdom` (npm), the diagram
is also parsed by Mermaid itself; otherwise that test is skipped.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from gpufleet.engine.plan import Plan
from gpufleet.render.mermaid import mermaid
from model.load import parse_estate
from tests.conftest import example_estate

ID = r"[A-Za-z][A-Za-z0-9_]*"


def test_diagram_lists_every_pool_and_tenant_with_quota_edges() -> None:
    for stack in ("aws-train", "onprem", "hybrid"):
        spec = parse_estate(example_estate(stack), stack)
        text = mermaid(spec)
        for _, pool in spec.pools():
            assert re.search(rf'\bpool_{re.escape(pool.name.replace("-", "_"))}\["pool {pool.name} ', text), pool.name
        for t in spec.tenants:
            assert f'tenant_{t.name.replace("-", "_")}(["tenant {t.name}' in text
            for pool_name, quota in t.gpu_quota.items():
                assert f'-->|"{quota} GPUs"| pool_{pool_name.replace("-", "_")}' in text


def test_diagram_shows_gpu_counts_fabrics_storage_and_burst() -> None:
    text = mermaid(parse_estate(example_estate("aws-train"), "aws-train"))
    assert "H100-80GB × 8 × 4 max nodes = 32 GPUs" in text
    assert 'fabric_use1__train_efa{{"fabric train-efa · EFA us-east-1a"}}' in text
    assert "pool_h100 --- fabric_use1__train_efa" in text
    assert 'storage_use1__lustre[("lustre · FSx Lustre 24000 GiB' in text
    hybrid = mermaid(parse_estate(example_estate("hybrid"), "hybrid"))
    assert 'tenant_research -.->|"burst"| pool_burst_h100' in hybrid
    assert "tenant_product -.->" not in hybrid  # product has no burst: true
    onprem = mermaid(parse_estate(example_estate("onprem"), "onprem"))
    assert "MIG 1g.10gb: 112 slices" in onprem


def test_diagram_syntax_ids_are_safe_and_labels_quoted() -> None:
    for stack in ("aws-train", "onprem", "hybrid"):
        text = mermaid(parse_estate(example_estate(stack), stack))
        lines = text.splitlines()
        assert lines[0] == "flowchart LR"
        assert sum(1 for x in lines if x.strip().startswith("subgraph ")) == sum(1 for x in lines if x.strip() == "end")
        for line in lines[1:]:
            s = line.strip()
            if s in ("end", "direction TB"):
                continue
            # every node id is safe, and every label is a quoted string with no raw quote inside
            m = re.match(rf"^(subgraph )?({ID})(.*)$", s)
            assert m, s
            for label in re.findall(r'"([^"]*)"', m.group(3)):
                assert "\n" not in label
            rest = re.sub(r'"[^"]*"', '""', m.group(3))
            assert re.fullmatch(
                rf'(\[""\]|\{{\{{""\}}\}}|\[\(""\)\]|\(\[""\]\)|( --- | -->\|""\| | -\.->\|""\| ){ID})?', rest
            ), s


def test_queue_names_come_from_the_plan_when_there_is_one(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["aws-train"]
    queues = {
        (r.inputs.get("metadata") or {}).get("namespace")
        for r in plan.kubernetes_objects()
        if r.inputs.get("kind") == "LocalQueue"
    }
    text = mermaid(parse_estate(example_estate("aws-train"), "aws-train"), plan)
    if not queues:
        pytest.skip("the example plan has no LocalQueues yet")
    assert "queues: " in text


MERMAID_DIR = os.environ.get("GPUFLEET_MERMAID_DIR", "")
PARSE_JS = """
import { JSDOM } from "jsdom";
import fs from "fs";
const dom = new JSDOM("<!DOCTYPE html><body></body>");
globalThis.window = dom.window; globalThis.document = dom.window.document;
const { default: mermaid } = await import("mermaid");
try { await mermaid.parse(fs.readFileSync(0, "utf8")); console.log("ok"); }
catch (e) { console.log(e.message); process.exit(1); }
"""


@pytest.mark.skipif(
    not (MERMAID_DIR and shutil.which("node") and (Path(MERMAID_DIR) / "node_modules" / "mermaid").exists()),
    reason="set GPUFLEET_MERMAID_DIR to a directory with node_modules/{mermaid,jsdom} to parse with Mermaid",
)
def test_mermaid_itself_parses_the_diagrams() -> None:
    for stack in ("aws-train", "onprem", "hybrid"):
        text = mermaid(parse_estate(example_estate(stack), stack))
        done = subprocess.run(
            ["node", "--input-type=module", "-e", PARSE_JS], input=text, cwd=MERMAID_DIR, capture_output=True, text=True
        )
        assert done.returncode == 0, f"{stack}: {done.stdout}{done.stderr}"
