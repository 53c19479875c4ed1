"""Automatic presence judges (SemiAutoQAPyramid / AutoQAPyramid): one interface, several backends."""

from annotation.judges.base import JudgeError, PresenceJudge, PresencePair
from annotation.judges.registry import build_judge, get_judge

__all__ = ["JudgeError", "PresenceJudge", "PresencePair", "build_judge", "get_judge"]
