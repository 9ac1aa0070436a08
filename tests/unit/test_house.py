"""House rules on the repository's shape, read from files only (no processes): no module of
the package over 600 lines, a README under 400 lines, and CONTRIBUTING.md's package table
naming every module in its folder's row. Each failure says what to do."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "kubectl_squarepeg"
MODULE_LIMIT = 600
README_LIMIT = 400
TABLE_SECTION = "## The package"


def lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def modules() -> list[Path]:
    """Every module of the package, as a path relative to it (`run/runner.py`), bytecode
    caches left out."""
    return sorted(path.relative_to(PACKAGE) for path in PACKAGE.rglob("*.py")
                  if "__pycache__" not in path.parts)


def package_table() -> dict[str, str]:
    """CONTRIBUTING.md's package table, one entry per row: each name of the row's first cell
    (`cli/`, `errors.py`) to the whole row's text."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    begin = text.index(TABLE_SECTION)
    end = text.find("\n## ", begin + len(TABLE_SECTION))
    rows: dict[str, str] = {}
    for line in text[begin:end if end >= 0 else len(text)].splitlines():
        if not line.startswith("|"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not cells[0].startswith("`"):
            continue  # the header row and its rule
        for name in re.findall(r"`([^`]+)`", cells[0]):
            rows[name] = line
    return rows


def names(row: str, module: Path, folder: str) -> bool:
    """Whether a row names the module by its file name or by its path (from the row's folder
    or from the package): `runner.py`, `run/runner.py`. A name inside another folder's path
    (`cluster/kubectl.py` for `plan/kubectl.py`) does not count."""
    below = module.relative_to(folder).as_posix() if folder else module.as_posix()
    spellings = {module.name, below, module.as_posix()}
    return any(re.search(r"(?<![\w./-])" + re.escape(spelling) + r"(?![\w])", row)
               for spelling in spellings)


def test_no_module_is_over_the_limit() -> None:
    counts = {module.as_posix(): lines(PACKAGE / module) for module in modules()}
    offenders = sorted((name, count) for name, count in counts.items() if count > MODULE_LIMIT)
    assert not offenders, (
        f"modules over {MODULE_LIMIT} lines: "
        + ", ".join(f"kubectl_squarepeg/{name} ({count})" for name, count in offenders)
        + ". Split each by what it owns into modules of its folder (each with a docstring "
        "saying what it owns), and name the new modules in CONTRIBUTING.md's package table.")


def test_the_readme_is_short() -> None:
    count = lines(ROOT / "README.md")
    assert count < README_LIMIT, (
        f"README.md has {count} lines (the limit is under {README_LIMIT}). The README is for "
        "users: keep each promise there in short, and move the depth (mechanics, figures, "
        "long examples) to the fitting page of docs/, linked from the README.")


def test_the_package_table_names_every_module() -> None:
    rows = package_table()
    missing = []
    for module in modules():
        if module.name == "__init__.py" and module.parent != Path("."):
            continue
        # The deepest folder with a row of its own: `run/` for run/runner.py, "" for errors.py.
        folders = [parent.as_posix() for parent in module.parents if parent != Path(".")]
        folder = next((name for name in folders if f"{name}/" in rows), "")
        row = rows.get(f"{folder}/", "") if folder else "\n".join(
            line for name, line in rows.items() if not name.endswith("/"))
        if not row:
            missing.append(f"{module.as_posix()} (no row for its folder: add a row "
                           f"`{module.parts[0]}/` to the table)")
        elif not names(row, module, folder):
            where = f"the row `{folder}/`" if folder else "a row of its own"
            missing.append(f"{module.as_posix()} (in {where})")
    assert not missing, (
        f"CONTRIBUTING.md's package table ({TABLE_SECTION!r}) does not name: "
        + "; ".join(missing)
        + ". Add each module's file name to its folder's row, with a few words on what it owns.")
