"""Database triggers that keep a predicate's span inside its sentence.

A CHECK constraint cannot look at another table, so this is a trigger on
insert and update of predicates, written for each supported backend
(character lengths: PostgreSQL's and SQLite's length() count characters,
as Python's len() does).  Predicates without a sentence (imported by id
only) pass: the sub-select yields NULL.  Installing is idempotent; SQLite
drops triggers when a migration rebuilds the table, so migrations that
alter the predicate table install them again.
"""

SQLITE_INSTALL = [
    "DROP TRIGGER IF EXISTS annotation_predicate_span_insert;",
    "DROP TRIGGER IF EXISTS annotation_predicate_span_update;",
    """
    CREATE TRIGGER annotation_predicate_span_insert BEFORE INSERT ON annotation_predicate
    WHEN NEW."end" > (SELECT length(text) FROM annotation_referencesentence WHERE id = NEW.sentence_id)
    BEGIN SELECT RAISE(ABORT, 'predicate span reaches past the end of its sentence'); END;
    """,
    """
    CREATE TRIGGER annotation_predicate_span_update BEFORE UPDATE ON annotation_predicate
    WHEN NEW."end" > (SELECT length(text) FROM annotation_referencesentence WHERE id = NEW.sentence_id)
    BEGIN SELECT RAISE(ABORT, 'predicate span reaches past the end of its sentence'); END;
    """,
]
SQLITE_REMOVE = SQLITE_INSTALL[:2]
POSTGRES_INSTALL = [
    """
    CREATE OR REPLACE FUNCTION annotation_predicate_span_check() RETURNS trigger AS $$
    BEGIN
        IF NEW."end" > (SELECT length(text) FROM annotation_referencesentence WHERE id = NEW.sentence_id) THEN
            RAISE EXCEPTION 'predicate span reaches past the end of its sentence'
                USING ERRCODE = 'check_violation';
        END IF;
        RETURN NEW;
    END;
    $$ LANGUAGE plpgsql;
    """,
    "DROP TRIGGER IF EXISTS annotation_predicate_span ON annotation_predicate;",
    """
    CREATE TRIGGER annotation_predicate_span BEFORE INSERT OR UPDATE ON annotation_predicate
    FOR EACH ROW EXECUTE FUNCTION annotation_predicate_span_check();
    """,
]
POSTGRES_REMOVE = [
    "DROP TRIGGER IF EXISTS annotation_predicate_span ON annotation_predicate;",
    "DROP FUNCTION IF EXISTS annotation_predicate_span_check();",
]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        for statement in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement)

    return run


install = _run({"sqlite": SQLITE_INSTALL, "postgresql": POSTGRES_INSTALL})
remove = _run({"sqlite": SQLITE_REMOVE, "postgresql": POSTGRES_REMOVE})
