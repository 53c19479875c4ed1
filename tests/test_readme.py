"""The README is the short front of the documentation site (issue 42): at most 200 lines, the two commands, and
links that resolve into the site (docs/) or the repository. What the README's commands used to be checked for
(they run as written on the embedded default; every researcher page is named) is checked on docs/ by
tests/test_docs.py, where that content moved."""

from __future__ import annotations

import re

from tests.conftest import REPO

README = (REPO / "README.md").read_text()


def _slugs(markdown: str) -> set[str]:
    """Anchors of a Markdown page's headings, as MkDocs' toc and GitHub make them."""
    headings = re.findall(r"^#+ (.*)$", markdown, re.M)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def test_the_readme_is_at_most_200_lines():
    assert len(README.splitlines()) <= 200


def test_the_readme_gives_the_two_commands_and_links_into_the_site():
    assert "make demo" in README and "make test" in README and "make docs" in README
    assert len([link for link in re.findall(r"\]\(([^)\s]+)\)", README) if link.startswith("docs/")]) >= 5


def test_every_link_of_the_readme_resolves():
    for link in re.findall(r"\]\(([^)\s]+)\)", README):
        if link.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = link.partition("#")
        target = REPO / path if path else REPO / "README.md"
        assert target.exists(), link
        if anchor and target.suffix == ".md":
            assert anchor in _slugs(target.read_text()), link


def test_every_manage_py_command_of_the_readme_exists_and_is_in_the_docs():
    from django.core.management import get_commands

    named = set(re.findall(r"manage\.py ([a-z_]+)", README))
    assert named and named <= set(get_commands()), named - set(get_commands())
    docs = "\n".join(path.read_text() for path in (REPO / "docs").rglob("*.md"))
    assert all(f"manage.py {command}" in docs for command in named)
