"""docs/rules.md is generated from the rule registry and kept equal to it."""

from __future__ import annotations

from attlens.analysis.plan import load_rules
from attlens.report.markdown import rules_to_markdown
from conftest import REPO


def test_rules_md_is_the_generated_reference():
    want = rules_to_markdown(load_rules())
    have = (REPO / "docs/rules.md").read_text()
    assert have == want, "docs/rules.md is stale: run `python3 -m attlens.report.markdown rules > docs/rules.md`"


def test_rules_md_lists_every_rule_with_its_preconditions():
    text = (REPO / "docs/rules.md").read_text()
    for rid, info in load_rules().items():
        assert f"### `{rid}`" in text
        for pid, ptext in info.preconditions:
            assert f"`{pid}`: {ptext}" in text
