"""The LLM judge: an OpenAI-compatible chat endpoint asked the protocol's YES/NO presence question.

Settings (environment): ``LLM_BASE_URL`` (e.g. http://127.0.0.1:8080/v1), ``LLM_MODEL``,
``LLM_API_KEY``, ``LLM_SHOTS`` (k in-context examples, default 5),
``LLM_SHOT_SAMPLING`` ("random", the paper's, default; or "balanced" YES/NO),
``LLM_SHOT_SEED`` (default 0), ``LLM_MAX_CONCURRENCY`` (parallel requests,
default 4), ``LLM_RETRIES`` (default 3), ``LLM_TIMEOUT`` (seconds, default 30).

As in the paper, the k examples are sampled at random from other
references: from the campaign's gold labels, never from the reference of the
pair being judged (the pair's ``context`` is its reference text), seeded by
``LLM_SHOT_SEED`` and the reference so that a run is reproducible.  When the
gold cannot give k examples from other references for every pair (a campaign
without gold: none), the judge runs with as many as it can give, and its
version and the run say so ("0-shot"), never "5-shot".  Answers go through a
strict parser: an answer that is not clearly YES or NO is asked again, then
reported as an error.
"""

from __future__ import annotations

import re
import threading
import time
import zlib
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from django.conf import settings

from annotation.automation.judges.base import JudgeError, PresenceJudge, PresencePair, clean_summary

INSTRUCTION = (
    "You will read a summary, then a question and an answer about it. Decide whether the question-answer "
    "pair can be inferred from the summary. Reply strictly with YES or NO, nothing else."
)


class LLMAnswerError(ValueError):
    """The model's reply is not a clear YES or NO."""


_DECORATION = re.compile(r"^[\s\"'`*_]+|[\s\"'`*_.!]+$")
_PREFIX = re.compile(r"^(answer|final answer)\s*:\s*", re.I)


def parse_yes_no(reply: str | None) -> bool:
    """True for YES, False for NO; ``LLMAnswerError`` for anything else.

    Accepted: the bare word in any case, optionally quoted or in bold, with a
    final full stop or exclamation mark, optionally after "Answer:".
    Refused: empty replies, both words ("yes and no"), hedges, sentences.
    """
    if reply is None:
        raise LLMAnswerError("empty reply")
    text = _DECORATION.sub("", _PREFIX.sub("", _DECORATION.sub("", reply)))
    word = text.strip().lower()
    if word == "yes":
        return True
    if word == "no":
        return False
    raise LLMAnswerError(f"not a YES/NO answer: {reply[:80]!r}")


@dataclass(frozen=True)
class Shot:
    summary: str
    unit: str
    present: bool
    reference: str


def user_message(summary: str, unit: str) -> str:
    return f"Summary:\n{clean_summary(summary)}\n\nQuestion and answer:\n{unit}\n\nCan this be inferred from the summary? YES or NO."


SAMPLINGS = ("random", "balanced")


def choose_shots(pool: Sequence[Shot], reference: str, k: int, seed: int = 0, sampling: str = "random") -> list[Shot]:
    """k examples none of which is from ``reference``, chosen reproducibly (seeded by ``seed`` and the reference).

    "random" (the paper's): uniformly at random from the other references' examples; "balanced":
    half YES, half NO where the pool allows.
    """
    if sampling not in SAMPLINGS:
        raise ValueError(f"shot sampling must be one of {', '.join(SAMPLINGS)}")
    if k <= 0:
        return []
    allowed = [s for s in pool if s.reference != reference]
    rng = np.random.default_rng([seed, zlib.crc32(reference.encode())])
    if sampling == "random":
        return [allowed[i] for i in rng.choice(len(allowed), size=min(k, len(allowed)), replace=False)]
    yes = [s for s in allowed if s.present]
    no = [s for s in allowed if not s.present]
    picked: list[Shot] = []
    for group, count in ((yes, (k + 1) // 2), (no, k // 2)):
        if group:
            picked += [group[i] for i in rng.choice(len(group), size=min(count, len(group)), replace=False)]
    rest = [s for s in allowed if s not in picked]
    while len(picked) < k and rest:
        picked.append(rest.pop(int(rng.integers(len(rest)))))
    rng.shuffle(picked)
    return picked


class LLMJudge(PresenceJudge):
    name = "llm"

    def __init__(self, model: str | None = None, base_url: str | None = None, api_key: str | None = None,
                 shots: int | None = None, concurrency: int | None = None, retries: int | None = None,
                 timeout: float | None = None, backoff: float = 0.5):
        self.base_url = (base_url or getattr(settings, "LLM_BASE_URL", "")).rstrip("/")
        self.model = model or getattr(settings, "LLM_MODEL", "")
        self.api_key = api_key if api_key is not None else getattr(settings, "LLM_API_KEY", "")
        if not self.base_url or not self.model:
            raise JudgeError("the llm judge needs LLM_BASE_URL and LLM_MODEL (environment) or llm:MODEL")
        self.k = int(getattr(settings, "LLM_SHOTS", 5) if shots is None else shots)
        self.sampling = getattr(settings, "LLM_SHOT_SAMPLING", "random") or "random"
        if self.sampling not in SAMPLINGS:
            raise JudgeError(f"LLM_SHOT_SAMPLING must be one of {', '.join(SAMPLINGS)}, not {self.sampling!r}")
        self.seed = int(getattr(settings, "LLM_SHOT_SEED", 0))
        self.concurrency = max(1, int(getattr(settings, "LLM_MAX_CONCURRENCY", 4) if concurrency is None else concurrency))
        self.retries = max(0, int(getattr(settings, "LLM_RETRIES", 3) if retries is None else retries))
        self.timeout = float(getattr(settings, "LLM_TIMEOUT", 30) if timeout is None else timeout)
        self.backoff = backoff
        self.requests_sent = 0
        self.use_pool([])

    @property
    def pool(self) -> list[Shot]:
        return self._pool

    @pool.setter
    def pool(self, shots) -> None:
        self.use_pool(shots)

    def use_pool(self, shots) -> None:
        """Take ``shots`` as the example pool and fix how many every pair gets.

        ``shots_used`` is what every pair is given whatever its reference: k when the pool holds k
        examples outside the reference that has most of them, fewer otherwise (0 without gold).
        """
        self._pool = list(shots)
        largest = max(Counter(s.reference for s in self._pool).values(), default=0)
        self.shots_used = max(0, min(self.k, len(self._pool) - largest))
        self.version = f"llm-2/{self.model}/{self.shots_used}-shot" + ("" if self.sampling == "random" else f"-{self.sampling}")

    def prepare(self, campaign) -> None:
        """Load the in-context example pool from the campaign's gold labels."""
        self.use_pool(gold_shot_pool(campaign))

    def describe(self) -> dict:
        return {
            "shots": self.shots_used, "shots_requested": self.k, "shot_sampling": self.sampling,
            "shot_seed": self.seed, "shot_pool": len(self._pool),
        }

    def messages(self, pair: PresencePair) -> list[dict]:
        result = [{"role": "system", "content": INSTRUCTION}]
        for shot in choose_shots(self._pool, pair.context, self.shots_used, seed=self.seed, sampling=self.sampling):
            result.append({"role": "user", "content": user_message(shot.summary, shot.unit)})
            result.append({"role": "assistant", "content": "YES" if shot.present else "NO"})
        result.append({"role": "user", "content": user_message(pair.summary, pair.unit)})
        return result

    def ask(self, pair: PresencePair) -> bool:
        """One judgment, retrying transport errors, 429/5xx replies and unparseable answers."""
        return chat_completion(self, self.messages(pair), parse_yes_no, max_tokens=5)

    def predict(self, pairs: Sequence[PresencePair]) -> np.ndarray:
        with ThreadPoolExecutor(max_workers=self.concurrency) as executor:
            answers = list(executor.map(self.ask, pairs))
        return np.array(answers, dtype=float)


def _client(endpoint):
    """One HTTP client per thread of the endpoint object (clients are not shared across threads)."""
    import httpx

    local = endpoint.__dict__.setdefault("_local", threading.local())
    if not hasattr(local, "client"):
        headers = {"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}
        local.client = httpx.Client(timeout=endpoint.timeout, headers=headers)
    return local.client


def chat_completion(endpoint, messages: list[dict], parse, max_tokens: int = 5):
    """POST ``messages`` to ``endpoint.base_url``/chat/completions and return ``parse(reply)``.

    ``endpoint`` has base_url, model, api_key, timeout, retries and backoff.  Transport errors,
    429/5xx replies and replies ``parse`` refuses (ValueError) are retried with exponential
    back-off (backoff x 2^n); other HTTP errors and running out of attempts raise ``JudgeError``.
    """
    import httpx

    body = {"model": endpoint.model, "messages": messages, "temperature": 0, "max_tokens": max_tokens}
    last = "no attempt"
    for attempt in range(endpoint.retries + 1):
        if attempt:
            time.sleep(endpoint.backoff * 2 ** (attempt - 1))
        try:
            endpoint.requests_sent = getattr(endpoint, "requests_sent", 0) + 1
            response = _client(endpoint).post(f"{endpoint.base_url}/chat/completions", json=body)
        except httpx.HTTPError as exc:
            last = f"{type(exc).__name__}: {exc}"
            continue
        if response.status_code == 429 or response.status_code >= 500:
            last = f"HTTP {response.status_code}"
            continue
        if response.status_code != 200:
            raise JudgeError(f"LLM endpoint refused the request: HTTP {response.status_code} {response.text[:200]}")
        try:
            return parse(response.json()["choices"][0]["message"]["content"])
        except (KeyError, IndexError, TypeError, ValueError) as exc:  # LLMAnswerError is a ValueError
            last = str(exc)
    raise JudgeError(f"LLM gave no usable answer after {endpoint.retries + 1} attempts: {last}")


def gold_shot_pool(campaign, limit: int = 400) -> list[Shot]:
    """Up to ``limit`` gold-labelled (summary, unit) pairs of the campaign, with their reference texts."""
    from annotation.models import ContentUnit, SystemSummary
    from annotation.selectors.scores import gold_rows

    rows = [r for r in gold_rows(campaign) if r[3] >= 0]
    rows = rows[:: max(1, len(rows) // limit)][:limit]  # spread over the whole campaign, not its first examples
    units = dict(ContentUnit.objects.filter(pk__in={r[0] for r in rows}).values_list("pk", "text"))
    summaries = {
        pk: (text, reference)
        for pk, text, reference in SystemSummary.objects.filter(pk__in={r[1] for r in rows}).values_list(
            "pk", "text", "example__reference"
        )
    }
    return [Shot(summaries[s][0], units[u], bool(y), summaries[s][1]) for u, s, _, y in rows]
