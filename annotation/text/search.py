"""Many strings looked up in one long text, in time linear in the text and the strings together.

A researcher's file may hold a sentence of half a megabyte and a quarter of a
million answers that must each be words of it, or a long predicate that must
stand as a word in it.  Looking each string up on its own reads the text once
per string; ``TextIndex`` reads it once per distinct *length* of the strings
looked up: every window of that length gets a polynomial hash (mod 2**64,
computed for all windows at once with numpy), and a string is present when a
window with its hash holds it (checked with ``str.startswith``; a hash that
matches by chance sends that string to an ordinary ``in``, so the answer is
always exact).  ``scans`` counts the passes over the text, for the tests.
"""

from __future__ import annotations

import re

import numpy as np

# An odd base is invertible mod 2**64, which turns prefix sums into window hashes (see _windows).
_BASE = 0x9E3779B97F4A7C15
_INVERSE = pow(_BASE, -1, 2**64)
_MASK = 2**64 - 1
_BOUNDARY = re.compile(r"\b")
# A length with this few strings, or a text this short, is searched with ``in`` / ``re``: one C scan each.
_FEW = 4
_SHORT = 4096


def _codes(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.uint64)


def _powers(base: int, n: int) -> np.ndarray:
    """base**0 .. base**(n-1) mod 2**64 (numpy's unsigned products wrap, which is the modulus)."""
    out = np.full(n, base, dtype=np.uint64)
    if n:
        out[0] = 1
    return np.cumprod(out, dtype=np.uint64)


class TextIndex:
    def __init__(self, text: str):
        self.text = text
        self.scans = 0
        self._prefix: np.ndarray | None = None

    def _prepare(self) -> None:
        codes = _codes(self.text)
        n = len(codes)
        self._pow = _powers(_BASE, n + 1)
        self._inv = _powers(_INVERSE, n + 1)
        self._prefix = np.zeros(n + 1, dtype=np.uint64)
        np.cumsum(codes * self._pow[:n], dtype=np.uint64, out=self._prefix[1:])

    def _windows(self, length: int) -> np.ndarray:
        """The hash of the text's window [i, i + length) for every i: sum of code[i + j] * base**j."""
        if self._prefix is None:
            self._prepare()
        self.scans += 1
        p = self._prefix
        return (p[length:] - p[: len(p) - length]) * self._inv[: len(p) - length]

    def _hashes(self, strings: list[str], length: int) -> np.ndarray:
        if self._prefix is None:
            self._prepare()
        codes = _codes("".join(strings)).reshape(len(strings), length)
        return (codes * self._pow[:length]).sum(axis=1, dtype=np.uint64)

    def absent(self, strings) -> set[str]:
        """The strings (of ``strings``) that are not substrings of the text."""
        by_length: dict[int, list[str]] = {}
        for s in set(strings):
            by_length.setdefault(len(s), []).append(s)
        missing: set[str] = set()
        for length, group in by_length.items():
            if length > len(self.text):
                missing.update(group)
            elif length == 0:
                continue
            elif len(group) <= _FEW or len(self.text) <= _SHORT:
                self.scans += len(group)
                missing.update(s for s in group if s not in self.text)
            else:
                missing.update(self._absent_of_length(length, group))
        return missing

    def _absent_of_length(self, length: int, group: list[str]) -> list[str]:
        wanted = self._hashes(group, length)
        order = np.argsort(wanted, kind="stable")
        ranked = wanted[order]
        windows = self._windows(length)
        # Only windows whose hash's top bits are some string's go on to the binary search (a table of 16
        # slots per string lets about one window in 16 / len(group) through by chance).
        bits = min(24, max(8, (16 * len(group)).bit_length()))
        shift = np.uint64(64 - bits)
        seen = np.zeros(1 << bits, dtype=bool)
        seen[wanted >> shift] = True
        near = np.flatnonzero(seen[windows >> shift])
        slot = np.minimum(np.searchsorted(ranked, windows[near]), len(ranked) - 1)
        matched = near[ranked[slot] == windows[near]]
        slot = slot[ranked[slot] == windows[near]]
        position = np.full(len(group), -1, dtype=np.int64)
        position[order[slot]] = matched
        # Two strings with one hash: searchsorted points at the first only, so the others are looked up by ``in``.
        shared = np.zeros(len(group), dtype=bool)
        shared[order[1:][ranked[1:] == ranked[:-1]]] = True
        missing = []
        for s, at, by_hand in zip(group, position.tolist(), shared.tolist()):
            if by_hand or (at >= 0 and not self.text.startswith(s, at)):
                self.scans += 1
                if s not in self.text:
                    missing.append(s)
            elif at < 0:  # no window has its hash, so no window holds it
                missing.append(s)
        return missing

    def find_word(self, word: str) -> tuple[int, int] | None:
        """The first span of ``word`` in the text with a word boundary (regex ``\\b``) at both ends, or None;
        what ``re.search(r"\\b" + re.escape(word) + r"\\b", text)`` finds, without comparing the word at
        every boundary of the text."""
        text, length = self.text, len(word)
        if not word or length > len(text):
            return None
        if len(text) <= _SHORT:
            self.scans += 1
            match = re.search(r"\b" + re.escape(word) + r"\b", text)
            return match.span() if match else None
        target = self._hashes([word], length)[0]
        for at in np.flatnonzero(self._windows(length) == target).tolist():
            if _BOUNDARY.match(text, at) and _BOUNDARY.match(text, at + length) and text.startswith(word, at):
                return at, at + length
        return None
