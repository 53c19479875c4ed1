"""The form of one qualification item (or gold item) on the qualification tests page.

One form class for the four sections of a definition file; the fields it shows depend on the section.  The
form only shapes what was typed into a definition item: the checks are those of the file import
(``annotation.services.qualification_tests.build_item_hit``), so the page and the file accept the same items.
Lists are typed as text: alternatives of one answer separated by " | ".
"""

from __future__ import annotations

from django import forms

SECTION_TITLES = {
    "generation": "QA generation test item",
    "verification": "QA verification test item",
    "presence": "QA presence test item",
    "presence_gold": "Presence gold item (mixed into the judges' stream)",
}
ROWS = 8
MAX_ROWS = 30  # more questions or pairs than a HIT page holds: a file can still define them
SEPARATOR = "|"
VERDICTS = [("", "—"), ("valid", "Valid"), ("invalid", "Invalid")]
LABELS = [("", "—"), ("present", "Present"), ("absent", "Not present")]


def split_answers(text: str) -> list[str]:
    return [part.strip() for part in (text or "").split(SEPARATOR) if part.strip()]


def join_answers(answers) -> str:
    return f" {SEPARATOR} ".join(answers or [])


def rows_in(item: dict | None, data=None) -> int:
    """Rows the form needs: the item's questions or pairs and the rows posted, with two blank ones to spare."""
    import re

    have = len((item or {}).get("questions") or (item or {}).get("pairs") or [])
    posted = [int(m.group(1)) for key in (data or {}) for m in [re.match(r"[qp](\d{1,3})_", key)] if m]
    return min(MAX_ROWS, max([have + 2, *posted]))


class QualificationItemForm(forms.Form):
    """Fields of one item of ``section``; ``item()`` is the definition item typed, ``initial_from(item)`` the reverse."""

    def __init__(self, section: str, *args, statements: bool = False, n_rows: int = ROWS, **kwargs):
        super().__init__(*args, **kwargs)
        self.section, self.statements, self.n_rows = section, statements, max(ROWS, n_rows)
        text = lambda label, **kw: forms.CharField(label=label, max_length=2000, strip=True, **kw)  # noqa: E731
        area = lambda label, rows=2, **kw: forms.CharField(  # noqa: E731
            label=label, max_length=5000, strip=True, widget=forms.Textarea(attrs={"rows": rows}), **kw
        )
        if section in ("generation", "verification"):
            self.fields["sentence"] = area("Sentence")
            self.fields["predicate"] = text("Predicate (the verb as written in the sentence)")
        else:
            self.fields["candidate"] = area("Candidate text (the summary judged)", rows=3)
            self.fields["reference"] = area("Reference (shown for context)", required=False, rows=3)
            self.fields["predicate"] = text("Predicate in the reference (optional)", required=False)
        self.fields["predicate_start"] = forms.IntegerField(required=False, min_value=0, widget=forms.HiddenInput)
        if section == "generation":
            self.fields["arguments"] = area(
                "Key answers: one argument per line; a line may give alternatives separated by |", rows=4
            )
        for i in range(1, self.n_rows + 1):
            if section == "verification":
                self.fields[f"q{i}_question"] = text(f"Question {i}", required=False)
                self.fields[f"q{i}_answers"] = text(f"Answers shown {i}", required=False)
                self.fields[f"q{i}_valid"] = forms.ChoiceField(label=f"Key verdict {i}", choices=VERDICTS, required=False)
                self.fields[f"q{i}_key_answers"] = text(f"Key answers {i} (if not those shown)", required=False)
            elif statements:
                # Summary content units (Pyramid campaigns): a statement instead of a question and its answer.
                self.fields[f"p{i}_text"] = text(f"Statement {i}", required=False)
                self.fields[f"p{i}_present"] = forms.ChoiceField(label=f"Key label {i}", choices=LABELS, required=False)
            elif section in ("presence", "presence_gold"):
                self.fields[f"p{i}_question"] = text(f"Question {i}", required=False)
                self.fields[f"p{i}_answer"] = text(f"Answer {i}", required=False)
                self.fields[f"p{i}_present"] = forms.ChoiceField(label=f"Key label {i}", choices=LABELS, required=False)

        for name, field in self.fields.items():
            if name[:1] in "qp" and name[1:2].isdigit():
                field.widget.attrs["aria-label"] = field.label

    def rows(self):
        """The bound fields of each question or pair row, for the template."""
        prefix = "q" if self.section == "verification" else "p"
        names = [n for n in self.fields if n.startswith(f"{prefix}1_")]
        return [[self[n.replace(f"{prefix}1_", f"{prefix}{i}_", 1)] for n in names] for i in range(1, self.n_rows + 1)]

    def _predicate(self, text_field: str):
        data = self.cleaned_data
        predicate, start = data.get("predicate") or "", data.get("predicate_start")
        if predicate and start is not None and data.get(text_field, "")[start : start + len(predicate)] == predicate:
            return {"start": start, "end": start + len(predicate)}
        return predicate

    def item(self) -> dict:
        """The definition item typed (call after ``is_valid``); blank rows are left out."""
        data = self.cleaned_data
        if self.section == "generation":
            return {
                "sentence": data["sentence"], "predicate": self._predicate("sentence"),
                "arguments": [split_answers(line) for line in data["arguments"].splitlines() if split_answers(line)],
            }
        if self.section == "verification":
            questions = []
            for i in range(1, self.n_rows + 1):
                typed = [data.get(f"q{i}_{k}") for k in ("question", "answers", "valid", "key_answers")]
                if not any(typed):
                    continue
                entry = {"question": typed[0], "answers": split_answers(typed[1]),
                         "valid": {"valid": True, "invalid": False}.get(typed[2])}
                if split_answers(typed[3]):
                    entry["key_answers"] = split_answers(typed[3])
                questions.append(entry)
            return {"sentence": data["sentence"], "predicate": self._predicate("sentence"), "questions": questions}
        pairs = []
        for i in range(1, self.n_rows + 1):
            present = {"present": True, "absent": False}.get(data.get(f"p{i}_present"))
            if self.statements:
                if data.get(f"p{i}_text") or present is not None:
                    pairs.append({"text": data.get(f"p{i}_text"), "present": present})
                continue
            typed = [data.get(f"p{i}_{k}") for k in ("question", "answer")]
            if any(typed) or present is not None:
                # The question is kept even when blank: the import's check then names the row.
                pairs.append({"question": typed[0] or " ", "answer": typed[1], "present": present})
        item = {"candidate": data["candidate"], "reference": data.get("reference", ""), "pairs": pairs}
        predicate = self._predicate("reference")
        if predicate:
            item["predicate"] = predicate
        return item

    @staticmethod
    def initial_from(section: str, item: dict) -> dict:
        """The form's initial values for an existing item (``item_definition`` of its HIT)."""
        initial = {}
        text_field = "sentence" if section in ("generation", "verification") else "reference"
        for key in ("sentence", "candidate", "reference"):
            if key in item:
                initial[key] = item[key]
        predicate = item.get("predicate")
        if isinstance(predicate, dict):
            initial["predicate"] = item[text_field][predicate["start"] : predicate["end"]]
            initial["predicate_start"] = predicate["start"]
        elif predicate:
            initial["predicate"] = predicate
        if section == "generation":
            initial["arguments"] = "\n".join(join_answers(a) for a in item.get("arguments", []))
        for i, q in enumerate(item.get("questions", []), start=1):
            initial.update({
                f"q{i}_question": q["question"], f"q{i}_answers": join_answers(q.get("answers")),
                f"q{i}_valid": "valid" if q.get("valid") else "invalid", f"q{i}_key_answers": join_answers(q.get("key_answers")),
            })
        for i, p in enumerate(item.get("pairs", []), start=1):
            initial.update({
                f"p{i}_question": p.get("question", ""), f"p{i}_answer": p.get("answer", ""), f"p{i}_text": p.get("text", ""),
                f"p{i}_present": "present" if p.get("present") else "absent",
            })
        return initial
