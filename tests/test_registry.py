"""The rule registry lives apart from the plan: rules import the registry,
never the plan, so there is no plan ↔ rules import circle."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

RULES = Path(__file__).resolve().parents[1] / "src" / "attlens" / "analysis" / "rules"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return out


def test_no_rule_module_imports_the_plan():
    for f in sorted(RULES.glob("*.py")):
        assert "attlens.analysis.plan" not in _imports(f), f"{f.name} imports the plan (use attlens.analysis.registry)"


def test_registry_does_not_import_the_plan_or_the_rules_at_import_time():
    assert "attlens.analysis.plan" not in _imports(RULES.parent / "registry.py")
    code = ("import sys, attlens.analysis.registry as r; "
            "assert 'attlens.analysis.plan' not in sys.modules and 'attlens.analysis.rules' not in sys.modules; "
            "import attlens.analysis.rules; assert 'attlens.analysis.plan' not in sys.modules, 'rules imported the plan'; "
            "assert len(r.REGISTRY) == len(r.load_rules()) > 0")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_plan_reexports_the_registry():
    from attlens.analysis import plan, registry

    assert plan.rule is registry.rule and plan.REGISTRY is registry.REGISTRY and plan.Finding is registry.Finding
