"""Researcher and worker pages, one module per area: ``campaigns`` (list, detail, progress, workers,
leaderboard, qualifications), ``setup`` (creating and setting up campaigns, predicates, systems),
``review``, ``jobs``, ``agreement``, ``judges``."""
