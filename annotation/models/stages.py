"""The protocol's three stages as ``hits`` task types: their slugs and the defaults a task type is created with.

Plain constants (no model): the pipeline creates the task types (``annotation.services.pipeline.task_type``),
and the pages and reads refer to the stages by these slugs.
"""

GENERATION = "generation"
VERIFICATION = "verification"
PRESENCE = "presence"

TASK_TYPES = {
    GENERATION: dict(
        name="Write questions and answers",
        description="Read a sentence and write questions about one highlighted verb, with their answers from the sentence.",
        keywords="writing, questions, language, summarization",
        position=1,
        assignment_duration=20 * 60,
    ),
    VERIFICATION: dict(
        name="Check questions and answers",
        description="Decide whether questions about a highlighted verb are valid, and mark their answers in the sentence.",
        keywords="checking, questions, language, summarization",
        position=2,
        assignment_duration=15 * 60,
    ),
    PRESENCE: dict(
        name="Is it in the summary?",
        description="Read a summary and decide, for each question-answer pair, whether the summary contains it.",
        keywords="reading, judging, summarization",
        position=3,
        assignment_duration=15 * 60,
    ),
}

# Units of an "scu" campaign shown together in one presence HIT.
SCU_UNITS_PER_HIT = 4
