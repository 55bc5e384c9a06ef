"""`gpufleet diff` across git revisions: each side reviewed by its own code in a temporary git repository.

The last test runs the real program on an example stack.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.engine.plan import PlanResource
from gpufleet.review.diff.plans import DiffError
from gpufleet.review.diff.revision import diff_revision
from tests.conftest import example_config
from tests.review import repos
from tests.review.estates import FSX, NODE_GROUP, small
from tests.review.repos import PROGRAM, VIOLATION, commit, git, init_repo, stack_config, write_stack


@pytest.fixture
def two_revisions(tmp_path: Path) -> Path:
    return repos.two_revisions(tmp_path)


def keys(resources: list[PlanResource]) -> list[tuple[str, str]]:
    return [(r.type, r.name) for r in resources]


def test_diff_between_two_revisions_reports_added_changed_and_replaced(two_revisions: Path) -> None:
    d = diff_revision(two_revisions, "review", "main")

    assert keys(d.added) == [(NODE_GROUP, "use1-l40s")]
    assert d.removed == []
    assert [(r.removed.name, r.added.name, r.protected) for r in d.replaced] == [("use1-lustre", "use1-hot", True)]
    assert d.replaced[0].removed.type == FSX and d.replaced[0].similarity == 1.0
    assert [c.resource.name for c in d.changed] == ["use1-h100"]
    changes = {p.path: (p.before, p.after) for p in d.changed[0].changes}
    assert changes == {"scalingConfig.maxSize": (3, 4)}
    # secrets stay masked and unchanged: the node group's userData is a secret on both sides
    assert d.added[0].inputs["userData"] == "[secret]"

    # cost at base uses the base revision's own catalog ($50/h for p5.48xlarge), the working tree $55.04/h:
    # desired base = 2×50 + 1.861 + 2×7.70776 + 348/730 = 117.75324; head = 2×55.04 + 1.861 + 10.49264
    # (new l40s pool, desired = min = 1) + 15.41553 + 0.47671 = 138.32588; delta = +20.57264
    # max base = 3×50 + 2×1.861 + 15.41553 + 0.47671 = 169.61424; head = 4×55.04 + 3.722 + 2×10.49264
    # + 15.41553 + 0.47671 = 260.75952; delta = +91.14528
    # The rest of use1's bill (tests/review/cost/test_cost.py BILL): +0.69087 at desired on both sides; the new l40s
    # pool adds 1 root volume at desired (200 GB × $0.08 / 730 = +0.02192) and h100 +1, l40s +2 at max
    # (600 GB = +0.06575): desired base 118.94411 (1.34's control plane in extended support), delta +20.59456; delta max +91.21103
    # Both sides' 4 KMS keys (the site's, FSx, EFS and S3 tiers) add 4 × $1 / 730 = +0.00548 to the base and
    # nothing to the deltas: base 118.94411 + 0.00548 = 118.94959.
    assert d.cost_total is not None
    assert d.cost_total.base["desired"] == pytest.approx(118.94959, abs=1e-3)
    assert d.cost_total.delta("desired") == pytest.approx(20.59456, abs=1e-3)
    assert d.cost_total.delta("max") == pytest.approx(91.21103, abs=1e-3)
    assert {c.name for c in d.cost_pools} == {"h100", "l40s"}

    assert d.findings_new == [VIOLATION] and d.findings_fixed == []
    assert d.base_missing is False and d.base_label.startswith("main (")


def test_diff_removes_its_temporary_worktree(two_revisions: Path) -> None:
    diff_revision(two_revisions, "review", "main")
    assert git(two_revisions, "worktree", "list").count("\n") == 0  # only the main working tree


def test_stack_missing_at_base_means_everything_is_added(tmp_path: Path) -> None:
    repo = init_repo(tmp_path, PROGRAM)
    commit(repo, "no stacks yet")
    write_stack(repo, "review", stack_config(small()))
    d = diff_revision(repo, "review", "main")
    assert d.base_missing
    assert keys(d.added) == [(NODE_GROUP, "use1-agents-g6e"), (NODE_GROUP, "use1-h100"), (FSX, "use1-lustre")]
    assert d.removed == [] and d.changed == [] and d.replaced == []
    # pools + FSx 184.73424 + the rest of use1's bill at max 1.16531 (tests/review/cost/test_cost.py; its 4 KMS keys
    # add 4 × $1 / 730 = 0.00548 to the 186.39407 of before): 186.39955
    assert d.cost_total is not None and d.cost_total.delta("max") == pytest.approx(186.39955, abs=1e-3)


def test_real_program_diff_on_an_example_stack_names_the_new_pool(tmp_path: Path) -> None:
    repo = init_repo(tmp_path, None)
    config = example_config("aws-train")
    write_stack(repo, "aws-train", config)
    commit(repo, "base")
    config["gpufleet:estate"]["sites"][0]["node_pools"].append(
        {"name": "batch-l4", "role": "batch", "instance_type": "g6.12xlarge", "scaling": {"min": 0, "max": 3}}
    )
    write_stack(repo, "aws-train", config)
    d = diff_revision(repo, "aws-train", "main")
    assert d.added and all("batch-l4" in r.name for r in d.added), [r.key for r in d.added]
    assert d.removed == [] and d.replaced == []
    # g6.12xlarge is $4.6016/h: 3 nodes at max, 0 at desired; each with a 200 GB gp3 root at $0.08/GB-month
    assert d.cost_total is not None and d.cost_total.delta("max") == pytest.approx(
        3 * 4.6016 + 600 * 0.08 / 730, abs=1e-3
    )
    assert d.cost_total.delta("desired") == pytest.approx(0.0)


def test_a_base_whose_review_document_lacks_a_field_is_too_old_to_review(tmp_path: Path) -> None:
    # the base's review prints no findings field at all; the working tree's code is the current one
    repo = init_repo(tmp_path, PROGRAM)
    write_stack(repo, "review", stack_config(small()))
    review = repo / "gpufleet" / "review" / "review.py"
    current = review.read_text()
    field = '            "findings": None if self.findings is None else [f.to_dict() for f in self.findings],\n'
    assert field in current
    review.write_text(current.replace(field, ""))
    commit(repo, "base: a document without findings")
    review.write_text(current)
    with pytest.raises(DiffError, match=r"^main is too old to review: its review document has no field 'findings'"):
        diff_revision(repo, "review", "main")
