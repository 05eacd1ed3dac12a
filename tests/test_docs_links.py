"""Every relative link and image in README.md and docs/**/*.md resolves (no Spark).

A link to a file must name an existing file (relative to the page); a link with an
``#anchor`` must also name a heading of the target page, slugged as GitHub slugs it.
External links (http, https, mailto, any ``scheme:``) are not checked.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])

_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
# [text](target "title") and ![alt](target); the text may hold one level of brackets
_MD_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HTML_LINK = re.compile(r"""<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*["']([^"']+)["']""", re.I)
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def _prose_lines(text: str):
    """(line number, line) of the lines outside fenced code blocks."""
    fenced = False
    for n, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield n, line


def github_slug(heading: str) -> str:
    """GitHub's anchor for a heading's text: markup dropped, lowercased, every character
    but letters, digits, ``-``, ``_`` and spaces dropped, spaces to ``-``."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links, images → their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML tags
    text = text.lower()
    text = "".join(c for c in text if c.isalnum() or c in "-_ ")
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor GitHub gives the page's headings (repeats get -1, -2, …)."""
    seen: dict[str, int] = {}
    out = set()
    for _, line in _prose_lines(page.read_text(encoding="utf-8")):
        m = _HEADING.match(line)
        if not m:
            continue
        slug = github_slug(m.group(2))
        if slug in seen:
            seen[slug] += 1
            slug = f"{slug}-{seen[slug]}"
        else:
            seen[slug] = 0
        out.add(slug)
    return out


def links(page: Path):
    """(line number, target) of every link and image of the page outside code."""
    for n, line in _prose_lines(page.read_text(encoding="utf-8")):
        line = _CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)
        for rx in (_MD_LINK, _HTML_LINK):
            for m in rx.finditer(line):
                yield n, m.group(1)


def broken_links(page: Path) -> list[str]:
    out = []
    for n, target in links(page):
        if _SCHEME.match(target) or target.startswith("//"):
            continue  # external (http, https, mailto, …)
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        where = f"{page.relative_to(ROOT)}:{n}: {target}"
        if not dest.exists():
            out.append(f"{where} (no file {path})")
        elif anchor and dest.suffix == ".md" and dest.is_file() and anchor not in anchors(dest):
            out.append(f"{where} (no heading #{anchor} in {dest.relative_to(ROOT)})")
    return out


def test_github_slug():
    assert github_slug("Peer yardstick: delta-rs MERGE (`--peers delta`)") == \
        "peer-yardstick-delta-rs-merge---peers-delta"
    assert github_slug("dynamic-rli — buckets that grow online, routed by a partitioned RLI") \
        == "dynamic-rli--buckets-that-grow-online-routed-by-a-partitioned-rli"
    heading = "consistent-hashing (`hoodie.index.bucket.engine=CONSISTENT_HASHING`, RFC-42)"
    assert github_slug(heading) == \
        "consistent-hashing-hoodieindexbucketengineconsistent_hashing-rfc-42"
    assert github_slug("Deletes (`delete_fraction`)") == "deletes-delete_fraction"
    assert github_slug("See [the driver](driver.md)") == "see-the-driver"


def test_pages_found():
    assert ROOT / "README.md" in PAGES
    assert any(p.parent.name == "indexes" for p in PAGES), "docs/indexes/*.md not found"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    bad = broken_links(page)
    assert not bad, f"{len(bad)} broken link(s) in {page.relative_to(ROOT)}:\n" + "\n".join(bad)
