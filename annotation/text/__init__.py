"""Language rules of the protocol with no database: predicate detection (spaCy), spans a worker selects,
and the word-level rules of QA-SRL questions and answers."""
