"""The QAPyramid world: campaigns, references, predicates, QA pairs, systems.

A campaign holds examples (one reference summary each, optionally the source
document).  Each reference is split into sentences; every verb predicate of a
sentence is a ``Predicate``.  Writers attach ``QAPair`` rows to predicates.
Systems contribute one ``SystemSummary`` per example.  Presence is judged on
*content units*: the kept QA pairs of a "qa" campaign, or the imported
Pyramid SCUs of an "scu" campaign; both live in ``ContentUnit`` so that
presence judging and scoring have a single shape.

The models live in one module per part of the protocol and are all importable from here:
``campaign`` (the study and its settings), ``texts`` (examples, sentences, predicates,
systems, summaries), ``units`` (QA pairs or SCUs, verifications, presence judgments, gold
labels), ``scores`` (gold scores), ``automation`` (automatic-scoring runs and their results),
``jobs`` (researchers' long jobs, QA pair corrections).
"""

from annotation.models.automation import (
    AutoPresence,
    AutoscoreChunk,
    AutoscoreRun,
    AutoSummaryScore,
    GeneratedUnit,
    JudgeCacheEntry,
    PresenceCandidate,
    PresenceRound,
)
from annotation.models.campaign import Campaign
from annotation.models.jobs import Job, QAPairCorrection
from annotation.models.scores import AgreementCache, HybridScore, SummaryScore, SystemScore
from annotation.models.texts import Example, Predicate, ReferenceSentence, System, SystemSummary
from annotation.models.units import ContentUnit, GoldOverride, GoldPresence, PresenceJudgment, QAPair, QAPairManager, Verification

__all__ = [
    "HybridScore",
    "AutoPresence",
    "AutoSummaryScore",
    "AutoscoreChunk",
    "AutoscoreRun",
    "Campaign",
    "ContentUnit",
    "Example",
    "GeneratedUnit",
    "GoldOverride",
    "GoldPresence",
    "Job",
    "JudgeCacheEntry",
    "Predicate",
    "PresenceCandidate",
    "PresenceRound",
    "PresenceJudgment",
    "QAPair",
    "QAPairCorrection",
    "QAPairManager",
    "ReferenceSentence",
    "System",
    "SummaryScore",
    "SystemScore",
    "AgreementCache",
    "SystemSummary",
    "Verification",
]
