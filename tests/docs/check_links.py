"""Every relative link and anchor in README.md, docs/ and infra/README.md
resolves: the file exists, and an anchor names a heading of that file as
GitHub renders it. Links inside code are not links; http(s) and mailto links
are not checked (the machines this is built on have no internet).

Run by ./scripts/test; prints each broken link as FILE:LINE: LINK and exits 1.
"""

import re
import sys
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", ROOT / "infra" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def outside_code(text):
    """(line number, line) of the lines outside fenced code blocks."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        if fence:
            if stripped.startswith(fence):
                fence = None
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            continue
        yield number, line


def prose(text):
    """The text with fenced code blanked and inline code removed, line for
    line, so that a link's offset gives its line and a link whose text runs
    over two lines is still one link."""
    lines = [""] * len(text.splitlines())
    for number, line in outside_code(text):
        lines[number - 1] = line
    return re.sub(r"`[^`\n]*`", "`code`", "\n".join(lines))


def links(path):
    """(line number, target) of every Markdown link outside code."""
    text = prose(path.read_text())
    for match in LINK.finditer(text):
        yield text.count("\n", 0, match.start(1)) + 1, match.group(1)


def slug(heading):
    """GitHub's anchor for a heading: lower case, markup and punctuation
    dropped (hyphens and underscores kept), spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(path):
    """Every anchor of a Markdown file, duplicates numbered as GitHub does."""
    seen = {}
    found = set()
    for _, line in outside_code(path.read_text()):
        match = HEADING.match(line)
        if match:
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
        for name in re.findall(r'<a (?:name|id)="([^"]+)"', line):
            found.add(name)
    return found


def broken_links(paths=DOCS):
    problems = []
    cache = {}
    for path in paths:
        for number, target in links(path):
            if re.match(r"^[a-z]+:", target):
                continue
            file_part, _, anchor = target.partition("#")
            dest = (path.parent / unquote(file_part)).resolve() if file_part else path
            where = f"{path.relative_to(ROOT)}:{number}: {target}"
            if not dest.exists():
                problems.append(f"{where} (no such file)")
            elif anchor and dest.suffix != ".md":
                problems.append(f"{where} (an anchor into a file that is not Markdown)")
            elif anchor:
                if dest not in cache:
                    cache[dest] = anchors(dest)
                if anchor not in cache[dest]:
                    problems.append(f"{where} (no heading '#{anchor}' in {dest.relative_to(ROOT)})")
    return problems


def main():
    problems = broken_links()
    for problem in problems:
        print(problem)
    count = sum(1 for path in DOCS for _ in links(path))
    if problems:
        print(f"check_links: {len(problems)} of {count} links in {len(DOCS)} files are broken", file=sys.stderr)
        sys.exit(1)
    print(f"check_links: all {count} links in {len(DOCS)} files resolve")


if __name__ == "__main__":
    main()
