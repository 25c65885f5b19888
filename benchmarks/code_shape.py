"""The package's shape: lines per file, the functions over 80 lines or 12 parameters, and private
names imported across packages, for the tree here and, with ``--before REV``, a git revision.

    python -m benchmarks.code_shape                    # this tree
    python -m benchmarks.code_shape --before d1ecbe5   # and a revision, side by side

Numba kernels (``@njit``) are listed apart: their arguments are arrays and scalars by design
(numba takes no objects), and their loops are written out for speed. Parameters count every
named one (``self``/``cls`` left out); the commands' click functions are left out of the
parameter count (each option is one). Prints Markdown.
"""

from __future__ import annotations

import argparse
import ast
import io
import subprocess
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LONG, MANY = 80, 12


def _sources(rev: str | None) -> dict[str, str]:
    """``{path under bimine/: source}`` of this tree or of git revision ``rev``."""
    if rev is None:
        return {str(p.relative_to(REPO)): p.read_text(encoding="utf-8") for p in sorted((REPO / "bimine").rglob("*.py"))}
    blob = subprocess.run(["git", "archive", rev, "bimine"], cwd=REPO, capture_output=True, check=True).stdout
    out = {}
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        for m in tar.getmembers():
            if m.isfile() and m.name.endswith(".py"):
                out[m.name] = tar.extractfile(m).read().decode("utf-8")
    return dict(sorted(out.items()))


def _decorators(node) -> list[str]:
    return [ast.unparse(d) for d in node.decorator_list]


def shape(sources: dict[str, str]) -> dict:
    """Lines per file; per function its lines and parameters; whether it is a kernel or a command."""
    files, funcs, private = {}, [], []
    for path, src in sources.items():
        files[path] = src.count("\n")
        tree = ast.parse(src)
        own = path.split("/")[1].removesuffix(".py")
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                deco = _decorators(node)
                a = node.args
                names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
                n = len(names) + (a.vararg is not None) + (a.kwarg is not None) - (names[:1] in (["self"], ["cls"]))
                funcs.append({"where": f"{path}:{node.lineno}", "name": node.name,
                              "lines": node.end_lineno - node.lineno + 1, "params": n,
                              "kernel": any("njit" in d for d in deco),
                              "command": any(d.startswith(("cli.", "click.")) for d in deco)})
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("bimine."):
                parts = node.module.split(".")
                if parts[1] != own:
                    for alias in node.names:
                        if any(x.startswith("_") and not x.startswith("__") for x in parts[2:] + [alias.name]):
                            private.append(f"{path}: from {node.module} import {alias.name}")
    return {"files": files, "funcs": funcs, "private": private}


def _table(title: str, rows: list[dict], key: str) -> str:
    out = [f"{title}: {len(rows)}", "", f"| function | {key} |", "|---|---:|"]
    out += [f"| `{r['where']}` {r['name']} | {r[key]} |" for r in sorted(rows, key=lambda r: -r[key])]
    return "\n".join(out) + "\n"


def report(name: str, s: dict) -> str:
    funcs = s["funcs"]
    long_ = [f for f in funcs if f["lines"] > LONG and not f["kernel"]]
    many = [f for f in funcs if f["params"] > MANY and not f["kernel"] and not f["command"]]
    kernels = [f for f in funcs if f["kernel"] and (f["lines"] > LONG or f["params"] > MANY)]
    lines = [f"## {name}", "",
             f"{len(s['files'])} files, {sum(s['files'].values()):,} lines, {len(funcs):,} functions; "
             f"private names imported across packages: {len(s['private'])}", "",
             _table(f"functions over {LONG} lines (kernels aside)", long_, "lines"),
             _table(f"functions over {MANY} parameters (kernels and click commands aside)", many, "params"),
             _table("numba kernels over either", kernels, "params")]
    if s["private"]:
        lines += ["private names imported across packages:", ""] + [f"- `{p}`" for p in s["private"]] + [""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", default=None, help="a git revision to measure too")
    args = ap.parse_args()
    if args.before:
        before = shape(_sources(args.before))
        print(report(f"before ({args.before})", before))
    after = shape(_sources(None))
    print(report("this tree", after))
    if args.before:
        b, a = before["files"], after["files"]
        changed = sorted(set(a) | set(b), key=lambda p: -abs(a.get(p, 0) - b.get(p, 0)))
        print("## lines per file, before and after (the 25 files that changed most)\n")
        print("| file | before | after |\n|---|---:|---:|")
        for p in changed[:25]:
            print(f"| `{p}` | {b.get(p, '-')} | {a.get(p, '-')} |")


if __name__ == "__main__":
    main()
