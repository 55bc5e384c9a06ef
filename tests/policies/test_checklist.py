"""Every check-list id the code cites resolves in docs/checklist.md, with a requirement, an enforcement and sources."""

from __future__ import annotations

import re

from gpufleet.review import check
from tests.conftest import ROOT

CHECKLIST = ROOT / "docs" / "checklist.md"
ID = r"[TPAH]\d{1,2}"
# A cited id: "T1: ..." / "A13/A14: ..." at the start of a policy description, or "check T12" / "(check P6)" /
# "Check-list items T5, A1-A3" in comments and docstrings of components/ and policies/.
CITED = re.compile(rf"(?:[Cc]heck(?:-list items?|s)?|\bitems?) ((?:{ID}(?:-{ID})?(?:, | and | / )?)+)")


def checklist_rows() -> dict[str, list[str]]:
    rows = {}
    for line in CHECKLIST.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and re.fullmatch(ID, cells[0]):
            rows[cells[0]] = cells[1:]
    return rows


def expand(text: str) -> set[str]:
    """`T1-T4, A13` -> {T1, T2, T3, T4, A13}."""
    out: set[str] = set()
    for a, b in re.findall(rf"({ID})(?:-({ID}))?", text):
        if b:
            out |= {f"{a[0]}{n}" for n in range(int(a[1:]), int(b[1:]) + 1)}
        else:
            out.add(a)
    return out


def cited_ids() -> set[str]:
    ids: set[str] = set()
    for pack in check.packs():
        for policy in pack.policies:
            lead = (policy.description or "").split(":", 1)[0]
            ids |= expand(lead) if re.fullmatch(rf"{ID}(/{ID})*", lead) else set()
    for path in [*(ROOT / "components").rglob("*.py"), *(ROOT / "policies").rglob("*.py")]:
        for m in CITED.finditer(path.read_text()):
            ids |= expand(m.group(1))
    return ids


def test_every_cited_check_list_id_has_a_row_with_requirement_enforcement_and_sources() -> None:
    rows = checklist_rows()
    cited = cited_ids()
    assert {"T1", "T6", "T11", "A13", "H7", "P6"} <= cited  # the scan finds ids where the code cites them
    assert sorted(cited - set(rows)) == []
    for row_id, (requirement, enforced_by, sources) in rows.items():
        assert requirement and enforced_by and sources, row_id


def test_the_id_scan_expands_ranges_and_lists() -> None:
    assert expand("T1-T4, A13/A14") == {"T1", "T2", "T3", "T4", "A13", "A14"}
    assert {m.group(1) for m in CITED.finditer("Check-list items T5, A1-A3 of x; (check P6)")} == {"T5, A1-A3", "P6"}
