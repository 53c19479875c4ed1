"""A simulated crowd that works through a campaign over HTTP, like real workers (or, ``mode="fast"``, through
the services behind the pages: ``service_driver``).

Each simulated worker logs in through the login form, asks for the next HIT
of each task type, reads the HIT (the simulator may look at the database to
decide what to answer: it plays a person who understands the sentence) and
posts the same form fields a browser would post.  Everything it does goes
through the real pages, validation and services.

How simulated workers answer:

- writers turn the predicate's syntactic dependents (subject, object,
  prepositional, temporal, locative, causal arguments) into template
  questions ("Who <verb> something?") with the dependent's words as answer;
- verifiers know a pair is sound when its answer is one of the predicate's
  dependents, and say so, right in a share ``accuracy`` of their answers;
- presence judges answer the imported gold label where one exists, else
  whether the answer's content words all occur in the candidate, right in a
  share ``accuracy`` of their answers;
- qualification and gold HITs are answered from their key, with the same
  accuracy;
- careless workers (ids ``sim-careless-<n>``) answer at random.

``same_answers``: whether a presence answer is right depends on the seed, the
unit, the system and how many judgments the unit already has, not on who
answers: two campaigns on the same data and seed (e.g. one under each presence
rule) get the same k-th judgment of every unit, whatever the hand-out order.
"""

from annotation.management.simulation.answers import Answerer, template_questions
from annotation.management.simulation.browser import HttpWorker, http_request, serve_in_background
from annotation.management.simulation.crowd import MODES, ensure_simulated_workers, run_rounds, simulate_crowd
from annotation.management.simulation.money import MoneyFigures, review_and_reconcile
from annotation.management.simulation.service_driver import ServiceWorker
from annotation.management.simulation.mturk import simulate_mturk_crowd
from annotation.management.simulation.prolific import refuse_https_redirect, simulate_prolific_crowd, standin_state
from annotation.management.simulation.report import (
    REJECTION_CATEGORY,
    REJECTION_MESSAGE,
    TASK_ORDER,
    MTurkWorkerFigures,
    ProlificFigures,
    SimulationReport,
    StageFigures,
)

__all__ = [
    "MODES",
    "MoneyFigures",
    "ServiceWorker",
    "review_and_reconcile",
    "REJECTION_CATEGORY",
    "REJECTION_MESSAGE",
    "TASK_ORDER",
    "Answerer",
    "HttpWorker",
    "MTurkWorkerFigures",
    "ProlificFigures",
    "SimulationReport",
    "StageFigures",
    "ensure_simulated_workers",
    "http_request",
    "refuse_https_redirect",
    "run_rounds",
    "serve_in_background",
    "simulate_crowd",
    "simulate_mturk_crowd",
    "simulate_prolific_crowd",
    "standin_state",
    "template_questions",
]
