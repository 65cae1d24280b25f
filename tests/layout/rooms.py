#!/usr/bin/env python3
"""The rooms of src/, measured as issue 65 counts them.

Lines are a file's non-test lines: a `tests.rs` file, a file under a `tests/`
folder, a module declared `#[cfg(test)] mod name;` and a `#[cfg(test)]`
module written inline do not count. Prints the
measures and every place a rule is broken; with --check RULE,..., exits 1
when one of those rules is broken:
- `size`: no non-test file over 500 lines;
- `glob`: no glob import (`use ...::*;`) outside a test module;
- `circle`: no circle among the modules of src/domain/ (`use crate::domain::x`);
- `cli`: src/cli under 5,000 non-test lines;
- `style`: one module style, a module's file beside its folder (`cli.rs`
  and `cli/`), never a `mod.rs`;
- `string`: no `Result<_, String>` outside a test module: an error is a type
  that names what went wrong, its sentence beside it.
"""
import argparse
import re
import sys
from pathlib import Path

MAX_FILE_LINES = 500
MAX_CLI_LINES = 5000
GLOB = re.compile(r"^\s*(pub(\([a-z]+\))?\s+)?use\s+[^;]*::\*;", re.M)


def is_test_file(path: Path) -> bool:
    return path.name == "tests.rs" or "tests" in path.parts[:-1]


def without_test_modules(text: str) -> str:
    """The text with every `#[cfg(test)]` item written inline taken out."""
    out, i = [], 0
    while True:
        at = text.find("#[cfg(test)]", i)
        if at < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:at])
        # The item runs to its `;` or to the brace that closes its body.
        j = at + len("#[cfg(test)]")
        while j < len(text) and text[j] not in ";{":
            j += 1
        if j < len(text) and text[j] == "{":
            depth = 0
            while j < len(text):
                if text[j] == "{":
                    depth += 1
                elif text[j] == "}":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
        i = j + 1


def module_of(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "mod":
        parts.pop()
    return "::".join(parts)


def top_module(src: Path, path: Path) -> str:
    """The first module under src/ a file belongs to: `cli` for src/cli.rs and src/cli/x.rs."""
    return path.relative_to(src).parts[0].removesuffix(".rs")


TEST_MODULE = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+([a-z_0-9]+)\s*;")


def test_only_modules(src: Path):
    """The files of every module declared `#[cfg(test)] mod name;`."""
    found = set()
    for path in src.rglob("*.rs"):
        # A module's children live beside mod.rs, or in the folder named after it
        # (the style src/ keeps: `cli.rs` beside `cli/`).
        folder = path.parent if path.name in ("mod.rs", "lib.rs", "main.rs") else path.with_suffix("")
        for name in TEST_MODULE.findall(path.read_text()):
            found |= {folder / f"{name}.rs", folder / name / "mod.rs"}
    return found


def measure(src: Path):
    files = {}
    test_only = test_only_modules(src)
    for path in sorted(src.rglob("*.rs")):
        if is_test_file(path.relative_to(src)) or path in test_only:
            continue
        files[path] = without_test_modules(path.read_text())
    lines = {p: len(t.rstrip().splitlines()) for p, t in files.items()}
    globs = [(p, m.group(0).strip()) for p, t in files.items() for m in GLOB.finditer(t)]
    # The domain's modules and which others each uses.
    domain = {}
    for p, t in files.items():
        rel = p.relative_to(src)
        if rel.parts[0] != "domain" or len(rel.parts) < 2:
            continue
        name = module_of(src / "domain", p).split("::")[0]
        if name in ("mod", ""):
            continue
        code = re.sub(r"//[^\n]*", "", t)
        uses = set(re.findall(r"crate::domain::([a-z_]+)", code))
        uses |= {u for u in re.findall(r"super::([a-z_]+)", code) if len(rel.parts) == 2}
        domain.setdefault(name, set()).update(u for u in uses if u != name)
    cli = sum(n for p, n in lines.items() if top_module(src, p) == "cli")
    return lines, globs, domain, cli


def string_errors(text: str):
    """Each `Result<T, String>` in `text` (`String` its last argument at the
    top level; `Result<HashMap<String, String>, E>` is none), as its line."""
    found = []
    for start in (m.end() for m in re.finditer(r"\bResult<", text)):
        depth, i, args, arg = 1, start, [], []
        while i < len(text) and depth:
            c = text[i]
            if text.startswith("->", i):
                arg.append("->")
                i += 2
                continue
            if c in "<([":
                depth += 1
            elif c in ">)]":
                depth -= 1
            if depth == 1 and c == ",":
                args.append("".join(arg))
                arg = []
            elif depth:
                arg.append(c)
            i += 1
        args.append("".join(arg))
        if len(args) == 2 and args[1].strip() == "String":
            found.append(text.count("\n", 0, start) + 1)
    return found


def circles(graph):
    """Every module that sits on a circle, with one circle through it."""
    found = []
    for start in sorted(graph):
        stack = [(start, [start])]
        seen = set()
        while stack:
            node, path = stack.pop()
            for nxt in sorted(graph.get(node, ())):
                if nxt == start:
                    found.append(path + [start])
                    stack = []
                    break
                if nxt not in seen and nxt in graph:
                    seen.add(nxt)
                    stack.append((nxt, path + [nxt]))
    unique = {}
    for c in found:
        unique.setdefault(frozenset(c), c)
    return list(unique.values())


RULES = ("size", "glob", "circle", "cli", "style", "string")


def report(src: Path):
    """The measures as one line, and each broken rule with where."""
    lines, globs, domain, cli = measure(src)
    broken = []
    big = sorted(((n, p) for p, n in lines.items() if n > MAX_FILE_LINES), reverse=True)
    for n, p in big:
        broken.append(("size", f"{p.relative_to(src.parent)}: {n} non-test lines, over {MAX_FILE_LINES}"))
    for p, line in globs:
        broken.append(("glob", f"{p.relative_to(src.parent)}: a glob import: {line}"))
    for c in circles(domain):
        broken.append(("circle", "a circle in src/domain: " + " -> ".join(c)))
    if cli >= MAX_CLI_LINES:
        broken.append(("cli", f"src/cli: {cli} non-test lines, not under {MAX_CLI_LINES}"))
    for path in sorted(src.rglob("mod.rs")):
        broken.append(("style", f"{path.relative_to(src.parent)}: a mod.rs; name the module's file after it"))
    strings = 0
    for p in lines:
        for line in string_errors(without_test_modules(p.read_text())):
            strings += 1
            broken.append(("string", f"{p.relative_to(src.parent)}: a Result<_, String> near line {line}"))
    summary = (f"{len(lines)} non-test files, {sum(lines.values())} lines; src/cli {cli}; "
          f"{len(big)} over {MAX_FILE_LINES}; {len(globs)} glob imports; "
          f"{len(circles(domain))} circles in src/domain; {strings} `Result<_, String>`")
    return summary, broken


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", default="", help="the rules to hold, comma-separated: " + ",".join(RULES))
    parser.add_argument("src", nargs="?", default=str(Path(__file__).resolve().parents[2] / "src"))
    args = parser.parse_args()
    checked = [rule for rule in args.check.split(",") if rule]
    unknown = [rule for rule in checked if rule not in RULES]
    if unknown:
        parser.error(f"no rule {', '.join(unknown)}: the rules are {', '.join(RULES)}")
    summary, broken = report(Path(args.src))
    print(summary)
    for rule, line in broken:
        print(("broken: " if rule in checked else "") + line)
    return 1 if any(rule in checked for rule, _ in broken) else 0


if __name__ == "__main__":
    sys.exit(main())
