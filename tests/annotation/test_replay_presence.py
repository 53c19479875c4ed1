"""``manage.py replay_presence`` (issue 29, item 3): the adaptive third judge replayed on raw judgments."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from tests.conftest import SHARED_DATA

RELEASED = SHARED_DATA / "qapyramid" / "QA_presence.json"


def j(*labels):
    """Judgments by workers w0, w1, ... with these labels, in this order."""
    return [[f"w{i}", label] for i, label in enumerate(labels)]


SMALL = {
    "s1": {
        "e1": {
            # First two agree on both pairs: no third judge; labels 1 and 0.
            "e1_1": {"Who opened something? the mayor": j(1, 1, 0), "What was opened? a park": j(0, 0, 0)},
            # First two disagree: the third decides (1).
            "e1_2": {"Who played? children": j(1, 0, 1)},
        }
    },
    "s2": {
        "e1": {
            # One disagreeing pair is enough for the whole HIT to get its third judge.
            "e1_1": {"Who opened something? the mayor": j(0, 1, 0), "What was opened? a park": j(1, 1, 1)},
            "e1_2": {"Who played? children": j(1, 1, 1)},
            # Not replayable: a pair with one judgment, and a HIT mixing 3 and 4.
            "e1_3": {"When? on Monday": j(1)},
            "e1_4": {"Where? there": j(1, 0, 1), "What closed? the airport": j(0, 0, 1, 1)},
        }
    },
}


def run(path, *extra) -> str:
    out = io.StringIO()
    call_command("replay_presence", "--raw", str(path), *extra, stdout=out)
    return out.getvalue()


@pytest.fixture
def small_raw(tmp_path):
    path = tmp_path / "raw.json"
    path.write_text(json.dumps(SMALL, indent=2))
    return path


def test_small_raw_file_gives_the_hand_counted_figures(small_raw):
    result = json.loads(run(small_raw, "--rule", "adaptive", "--format", "json"))
    # 4 HITs with 3 judgments per pair, 2 of them need a third: 12 assignments fixed, 2 x 4 + 2 = 10 adaptive.
    assert result["hits"] == 4
    assert result["third_needed"] == 2
    assert result["assignments_fixed"] == 12
    assert result["assignments_adaptive"] == 10
    assert result["saved_share"] == round(1 - 10 / 12, 4)
    assert result["labels_changed"] == 0
    # First two judgments per pair: (1,1) (0,0) (1,0) (0,1) (1,1) (1,1): o_11 = 6, o_00 = 2, o_01 = o_10 = 2,
    # n_1 = 8, n_0 = 4, n = 12; alpha = 1 - 11 * 4 / (2 * 8 * 4) = 0.3125.
    assert result["alpha_first_two"] == pytest.approx(0.3125, abs=1e-4)
    assert result["hits_left_out"] == 2
    assert result["hits_by_judgments"] == {"1": 1, "3": 4, "3+4": 1}


def test_fixed_rule_uses_every_assignment_and_the_table_says_so(small_raw):
    result = json.loads(run(small_raw, "--rule", "fixed", "--format", "json"))
    assert result["assignments"] == 12 and result["labels_changed"] == 0
    table = run(small_raw, "--format", "table")
    assert "Saved share" in table and "16.7%" in table
    assert "HITs left out (1 with 1, 1 with 3+4 judgments per pair): 2" in table


@pytest.mark.skipif(not RELEASED.exists(), reason="the released raw data (../shared/data) is not here")
def test_released_raw_file_matches_the_issue():
    result = json.loads(run(RELEASED, "--rule", "adaptive", "--format", "json"))
    assert result["hits"] == 3837
    assert result["third_needed"] == 1067
    assert result["assignments_fixed"] == 3 * 3837
    assert result["assignments_adaptive"] == 2 * 3837 + 1067
    assert result["labels_changed"] == 0
    assert round(result["saved_share"], 3) == 0.241
    assert result["hits_left_out"] == 123
    assert 0 < result["alpha_first_two"] < 1


@pytest.mark.parametrize(
    "content, expected",
    [
        ('{"s1": {"e1": {"e1_1": {"Who? x": [["w0", 1], ["w1", 0]\n  }}}', "line 2, column 3"),
        ("", "the file is empty"),
        ("[1, 2, 3]", "expected a JSON object of systems"),
        ("{}", "nothing to replay"),
        ('{"s1": ["e1"]}', '["s1"]: expected an object of examples, found a list'),
        ('{"s1": {"e1": {"e1_1": {}}}}', '["s1"]["e1"]["e1_1"]: expected an object of QA pairs, found an empty object'),
        ('{"s1": {"e1": {"e1_1": {"Who? x": []}}}}', '["Who? x"]: expected a list of [worker id, label] judgments, found an empty list'),
        ('{"s1": {"e1": {"e1_1": {"Who? x": [["w0", 1], ["w1", 2]]}}}}', '["Who? x"][1][1]: the label must be 0 (not present) or 1 (present), found 2'),
        ('{"s1": {"e1": {"e1_1": {"Who? x": [["w0", true]]}}}}', "[0][1]: the label must be 0"),
        ('{"s1": {"e1": {"e1_1": {"Who? x": [[7, 1]]}}}}', "[0][0]: the worker id must be a non-empty string, found 7"),
        ('{"s1": {"e1": {"e1_1": {"Who? x": [["w0", 1, "extra"]]}}}}', '[0]: expected [worker id, label], found ["w0", 1, "extra"]'),
        ('{"s1": {"e1": {"e1_1": {"Who? x": [["w0", NaN]]}}}}', "NaN is not a number JSON allows"),
        # A foreign file: the released QAPyramid data set's JSONL (one object per line).
        ('{"example_id": "a", "QAs": []}\n{"example_id": "b", "QAs": []}\n', "line 2, column 1"),
    ],
)
def test_malformed_or_foreign_file_is_one_clear_error(tmp_path, content, expected):
    path = tmp_path / "raw.json"
    path.write_text(content)
    with pytest.raises(CommandError) as caught:
        run(path)
    message = str(caught.value)
    assert expected in message
    assert message.startswith("raw.json")
    assert "Traceback" not in message


def test_foreign_jsonl_names_its_line(tmp_path):
    path = tmp_path / "data.jsonl"
    path.write_text('{"example_id": "a"}\n{"example_id": "b"}\n')
    with pytest.raises(CommandError, match=r"data\.jsonl: bad JSON: Extra data \(line 2, column 1\)"):
        run(path)


def test_missing_and_undecodable_files(tmp_path):
    with pytest.raises(CommandError, match="file not found"):
        run(tmp_path / "nope.json")
    with pytest.raises(CommandError, match="is a folder, not a file"):
        run(tmp_path)
    path = tmp_path / "latin.json"
    path.write_bytes(b'{"s\xe9": {}}')
    with pytest.raises(CommandError, match="not valid UTF-8"):
        run(path)
