"""Judges by name.  A name is a backend, optionally followed by ``:`` and an argument:

- ``lexical``, ``rouge1``, ``rouge2``, ``rougeL``: lexical baselines;
- ``trained`` or ``trained:NAME``: the offline judge saved by ``train_presence_judge``
  under ``settings.MODELS_DIR/NAME`` (default ``settings.PRESENCE_JUDGE_MODEL``): the
  fine-tuned MiniLM cross-encoder, or the frozen-features judge when that kind was trained there;
- ``nli:PATH_OR_ID``: a Hugging Face sequence-classification NLI model;
- ``llm`` or ``llm:MODEL``: an OpenAI-compatible chat endpoint (``settings.LLM_*``).

Judges are built once per process and kept (a Celery worker loads its model once).
"""

from __future__ import annotations

import threading
from typing import Callable

from annotation.automation.judges.base import JudgeError, PresenceJudge

_FACTORIES: dict[str, Callable[..., PresenceJudge]] = {}
_LOADED: dict[tuple, PresenceJudge] = {}
_LOCK = threading.Lock()


def register(backend: str):
    """Decorator: register ``factory(argument: str | None, **options) -> PresenceJudge`` under ``backend``."""

    def wrap(factory):
        _FACTORIES[backend] = factory
        return factory

    return wrap


def backends() -> list[str]:
    _load_builtin()
    return sorted(_FACTORIES)


def parse_name(name: str) -> tuple[str, str | None]:
    backend, _, argument = (name or "").strip().partition(":")
    return backend, (argument or None)


def build_judge(name: str, **options) -> PresenceJudge:
    """A new judge for ``name`` (raises ``JudgeError`` with a clear message for an unknown or broken one)."""
    _load_builtin()
    backend, argument = parse_name(name)
    if backend not in _FACTORIES:
        raise JudgeError(f"unknown judge {name!r}; known backends: {', '.join(sorted(_FACTORIES))}")
    return _FACTORIES[backend](argument, **options)


def get_judge(name: str, **options) -> PresenceJudge:
    """The process-wide judge for ``name`` (built on first use; later calls reuse the loaded model)."""
    key = (name, tuple(sorted(options.items())))
    with _LOCK:
        if key not in _LOADED:
            _LOADED[key] = build_judge(name, **options)
        return _LOADED[key]


def forget_judges() -> None:
    """Drop loaded judges (after a retrain, or in tests)."""
    with _LOCK:
        _LOADED.clear()


_BUILTIN_LOADED = False


def _load_builtin() -> None:
    global _BUILTIN_LOADED
    if _BUILTIN_LOADED:
        return
    _BUILTIN_LOADED = True
    from annotation.automation.judges import lexical

    @register("lexical")
    def _lexical(argument, **options):
        return lexical.ContentWordJudge(**({"threshold": float(argument)} if argument else {}), **options)

    for variant in ("rouge1", "rouge2", "rougeL"):
        register(variant)(lambda argument, _v=variant, **options: lexical.RougeJudge(_v, **options))

    @register("trained")
    def _trained(argument, **options):
        from annotation.automation.judges.trained import load_trained_judge

        return load_trained_judge(argument, **options)

    @register("nli")
    def _nli(argument, **options):
        from annotation.automation.judges.nli import NLIJudge

        if not argument:
            raise JudgeError("the nli judge needs a model: nli:/path/to/model or nli:hub-id")
        return NLIJudge(argument, **options)

    @register("llm")
    def _llm(argument, **options):
        from annotation.automation.judges.llm import LLMJudge

        return LLMJudge(model=argument, **options)
