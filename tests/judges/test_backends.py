"""The NLI, LLM and trained judges, and the QA generator, on small data built by the tests."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from annotation.automation.judges.base import JudgeError, PresencePair, summary_sentences
from annotation.automation.judges.lexical import ContentWordJudge, RougeJudge, content_word_recall
from annotation.automation.judges.llm import LLMAnswerError, LLMJudge, Shot, choose_shots, parse_yes_no
from annotation.automation.qa_generation import DependencyQAGenerator, parse_generated_pairs

# ---------------------------------------------------------------- lexical


def test_content_word_recall_counts_content_words_only():
    # content words of the unit: mayor, opened, park -> "park" and "mayor" occur, "opened" does not
    assert content_word_recall("The mayor opened the park", "<t> A mayor visits a park . </t>") == pytest.approx(2 / 3)
    judge = ContentWordJudge()
    assert judge.decide(judge.predict([PresencePair("the mayor opened a park", "The mayor opened the park")])).tolist() == [True]


def test_rouge_recall_judges():
    pair = PresencePair("storms closed the airport", "Storms closed the Denver airport")
    assert RougeJudge("rouge1").predict([pair])[0] == pytest.approx(4 / 5)
    assert RougeJudge("rouge2").predict([pair])[0] == pytest.approx(2 / 4)  # "storm close", "close the" of 4 bigrams
    with pytest.raises(ValueError, match="unknown ROUGE"):
        RougeJudge("rouge9")


def test_summary_sentences_from_tags_and_punctuation():
    assert summary_sentences("<t> One . </t> <t> Two . </t>") == ["One .", "Two ."]
    assert summary_sentences("It rained. Then it stopped! OK") == ["It rained.", "Then it stopped!", "OK"]


# ---------------------------------------------------------------- NLI on a tiny model built here


def _tiny_nli(path, labels):
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "a", "dog", "ran", "."]
    (path / "vocab.txt").write_text("\n".join(words) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(path / "vocab.txt"))
    config = BertConfig(
        vocab_size=len(words), hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=64, num_labels=len(labels), id2label=dict(enumerate(labels)),
        label2id={v: k for k, v in enumerate(labels)},
    )
    model = BertForSequenceClassification(config)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return model


def _bias(path, index, value=20.0):
    """Make the saved model's classifier prefer label ``index`` whatever the input."""
    import torch
    from transformers import BertForSequenceClassification

    model = BertForSequenceClassification.from_pretrained(path)
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.zero_()
        model.classifier.bias[index] = value
    model.save_pretrained(path)


PAIRS = [
    PresencePair("the cat sat on the mat .", "the cat sat"),
    PresencePair("a dog ran .", "the cat sat on a mat"),
    PresencePair("the dog sat on the mat . the cat ran .", "a dog"),
]


def test_nli_judge_loads_batches_and_maps_three_labels(tmp_path):
    from annotation.automation.judges.nli import NLIJudge

    _tiny_nli(tmp_path, ["contradiction", "neutral", "entailment"])
    judge = NLIJudge(str(tmp_path), batch_size=2)
    batched = judge.predict(PAIRS)
    one_by_one = np.concatenate([judge.predict([p]) for p in PAIRS])
    assert batched.shape == (3,) and np.all((batched >= 0) & (batched <= 1))
    assert np.allclose(batched, one_by_one, atol=1e-5)  # dynamic padding does not change the answers
    _bias(tmp_path, 2)  # entailment wins
    assert np.all(NLIJudge(str(tmp_path)).predict(PAIRS) > 0.99)
    _bias(tmp_path, 1)  # neutral wins: absent in the three-class reading, undecided in the two-class one
    assert np.all(NLIJudge(str(tmp_path)).predict(PAIRS) < 0.01)
    assert np.allclose(NLIJudge(str(tmp_path), reading="two-class").predict(PAIRS), 0.5, atol=1e-4)
    _bias(tmp_path, 0)
    assert np.all(NLIJudge(str(tmp_path), reading="two-class").predict(PAIRS) < 0.01)


def test_nli_judge_two_label_model_and_bad_models(tmp_path):
    from annotation.automation.judges.nli import NLIJudge

    two = tmp_path / "two"
    two.mkdir()
    _tiny_nli(two, ["not_entailment", "entailment"])
    _bias(two, 1)
    assert np.all(NLIJudge(str(two), reading="two-class").predict(PAIRS) > 0.99)
    anonymous = tmp_path / "anon"
    anonymous.mkdir()
    _tiny_nli(anonymous, ["LABEL_0", "LABEL_1", "LABEL_2"])
    with pytest.raises(JudgeError, match="entailment label"):
        NLIJudge(str(anonymous))
    assert NLIJudge(str(anonymous), entailment_index=2).entail == 2
    with pytest.raises(JudgeError, match="cannot load"):
        NLIJudge(str(tmp_path / "missing"))


# ---------------------------------------------------------------- LLM against a local HTTP server


class FakeChat(BaseHTTPRequestHandler):
    """An OpenAI-compatible /chat/completions: YES when the unit's words are all in the summary."""

    replies: list = []
    requests: list = []
    failures = 0

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(body)
        if type(self).failures > 0:
            type(self).failures -= 1
            self.send_response(503)
            self.end_headers()
            return
        if type(self).replies:
            reply = type(self).replies.pop(0)
        else:
            last = body["messages"][-1]["content"]
            summary = last.split("Summary:\n")[1].split("\n\nQuestion")[0].lower()
            unit = last.split("Question and answer:\n")[1].split("\n\n")[0].lower()
            reply = "YES" if all(w in summary for w in unit.split()) else "no."
        data = json.dumps({"choices": [{"message": {"role": "assistant", "content": reply}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def chat_server():
    FakeChat.replies, FakeChat.requests, FakeChat.failures = [], [], 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeChat)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    "reply,expected",
    [("YES", True), ("no", False), (" Yes.", True), ("**NO**", False), ('"yes"', True), ("Answer: NO", False), ("No!", False)],
)
def test_parser_accepts_clear_answers(reply, expected):
    assert parse_yes_no(reply) is expected


@pytest.mark.parametrize("reply", ["", None, "Maybe", "Yes and no", "YES, because the summary says so", "The answer is yes", "N0", "yess"])
def test_parser_refuses_odd_answers(reply):
    with pytest.raises(LLMAnswerError):
        parse_yes_no(reply)


def test_balanced_shots_on_request_and_never_from_the_same_reference():
    pool = [Shot(f"s{i}", f"u{i}", i % 2 == 0, "ref-A" if i < 4 else "ref-B") for i in range(12)]
    picked = choose_shots(pool, "ref-A", 4, sampling="balanced")
    assert len(picked) == 4 and all(s.reference != "ref-A" for s in picked)
    assert sum(s.present for s in picked) == 2
    assert choose_shots(pool, "ref-A", 4, sampling="balanced") == picked  # reproducible
    with pytest.raises(ValueError, match="random, balanced"):
        choose_shots(pool, "ref-A", 4, sampling="stratified")


def test_shots_are_sampled_at_random_from_other_references_by_default():
    """The paper's sampling: uniform over the other references' examples, not forced to balance YES/NO."""
    pool = [Shot(f"s{i}", f"u{i}", i % 10 != 0, f"ref-{i % 7}") for i in range(70)]  # 90% YES
    picks = {ref: choose_shots(pool, ref, 5) for ref in (f"ref-{j}" for j in range(7))}
    for ref, picked in picks.items():
        assert len(picked) == 5 and len(set(picked)) == 5 and all(s.reference != ref for s in picked)
        assert choose_shots(pool, ref, 5) == picked  # seeded: the same run gives the same shots
    yes_share = sum(s.present for picked in picks.values() for s in picked) / 35
    assert yes_share > 0.7  # balanced sampling would give 3 of 5 at most
    assert any(choose_shots(pool, ref, 5, seed=1) != picked for ref, picked in picks.items())  # the seed matters


def test_the_judge_says_how_many_shots_it_really_uses(settings):
    judge = LLMJudge(model="tiny", base_url="http://127.0.0.1:9/v1", shots=5)
    # No gold: zero-shot, and named so.
    assert judge.shots_used == 0 and judge.version == "llm-2/tiny/0-shot"
    assert [m["role"] for m in judge.messages(PresencePair("a summary", "Who won? x", context="ref"))] == ["system", "user"]
    # Gold concentrated on one reference: a pair of another reference could get 4 shots, but one of
    # ref-A only 1 — every pair gets 1, and the version says 1-shot.
    judge.pool = [Shot("s", f"u{i}", True, "ref-A") for i in range(3)] + [Shot("s", "u9", False, "ref-B")]
    assert judge.shots_used == 1 and judge.version == "llm-2/tiny/1-shot"
    judge.pool = [Shot("s", f"u{i}", True, f"ref-{i}") for i in range(8)]
    assert judge.shots_used == 5 and judge.version == "llm-2/tiny/5-shot"
    assert judge.describe() == {"shots": 5, "shots_requested": 5, "shot_sampling": "random", "shot_seed": 0, "shot_pool": 8}
    settings.LLM_SHOT_SAMPLING = "balanced"
    assert LLMJudge(model="tiny", base_url="http://x/v1").version == "llm-2/tiny/0-shot-balanced"
    settings.LLM_SHOT_SAMPLING = "stratified"
    with pytest.raises(JudgeError, match="LLM_SHOT_SAMPLING"):
        LLMJudge(model="tiny", base_url="http://x/v1")


def test_llm_judge_asks_the_endpoint_with_retries_and_concurrency(chat_server):
    judge = LLMJudge(model="tiny", base_url=chat_server, api_key="k", shots=2, concurrency=3, retries=2, backoff=0.01)
    judge.pool = [Shot("the cat sat", "the cat sat", True, "other ref"), Shot("a dog", "the cat", False, "other ref"),
                  Shot("a bird", "the fish", False, "third ref"), Shot("the mat", "a mat", True, "ref 1")]
    FakeChat.failures = 1  # the first request gets a 503 and is retried
    FakeChat.replies = ["perhaps"]  # an unparseable answer is asked again
    pairs = [PresencePair("the cat sat on the mat", "cat sat", context="ref 1"), PresencePair("a dog ran", "cat sat", context="ref 1")]
    assert judge.predict(pairs).tolist() == [1.0, 0.0]
    assert len(FakeChat.requests) == 4
    sent = FakeChat.requests[-1]
    assert sent["model"] == "tiny" and sent["temperature"] == 0
    roles = [m["role"] for m in sent["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]  # 2 shots, then the question
    assert "ref 1" not in json.dumps(sent["messages"][1:-1]) and "a mat" not in json.dumps(sent["messages"])
    assert "strictly with YES or NO" in sent["messages"][0]["content"]


def test_llm_judge_gives_up_with_a_clear_error(chat_server):
    judge = LLMJudge(model="tiny", base_url=chat_server, shots=0, retries=1, backoff=0.01)
    FakeChat.replies = ["I think so", "Probably"]
    with pytest.raises(JudgeError, match="LLM gave no usable answer after 2 attempts"):
        judge.predict([PresencePair("a", "b")])
    with pytest.raises(JudgeError, match="LLM_BASE_URL"):
        LLMJudge(model="tiny", base_url="")


# ---------------------------------------------------------------- QA generation


@pytest.mark.parametrize(
    "sentence,expected",
    [
        (
            "The mayor opened a new park on Monday.",
            {("Who opened something?", "The mayor"), ("What did someone open?", "a new park"),
             ("When did someone open something?", "Monday")},
        ),
        ("The park was opened by the mayor.", {("What was opened?", "The park"), ("Who opened something?", "the mayor")}),
        (
            "Storms closed the airport because the runway flooded.",
            {("What closed something?", "Storms"), ("What did something close?", "the airport"),
             ("Why did something close something?", "the runway flooded"), ("What flooded?", "the runway")},
        ),
        (
            "Many people have been sleeping outdoors because of aftershocks.",
            {("Who has been sleeping?", "Many people"), ("Why has someone been sleeping?", "aftershocks")},
        ),
        ("Pushpa Basnet was forced to evacuate her residence.", {("Who was forced?", "Pushpa Basnet"), ("What did something evacuate?", "her residence")}),
        ("She quickly left the room.", {("Who left something?", "She"), ("How did someone leave something?", "quickly"), ("What did someone leave?", "the room")}),
        ("The company has reported record profits.", {("What has reported something?", "The company"), ("What has something reported?", "record profits")}),
        ("Police said the suspect had fled to Mexico.", {("Who said something?", "Police"), ("What did someone say?", "the suspect had fled to Mexico"), ("Who had fled?", "the suspect"), ("Where had someone fled?", "Mexico")}),
    ],
)
def test_dependency_generator_on_hand_checked_sentences(sentence, expected):
    pairs = DependencyQAGenerator().generate_for_text(sentence)
    assert {(qa.question, qa.answer) for qa in pairs} == expected
    assert all(qa.text == f"{qa.question} {qa.answer}" for qa in pairs)


def test_generator_reads_tagged_references_and_llm_style_replies():
    pairs = DependencyQAGenerator().generate_for_text("<t> Storms hit Denver . </t> <t> Flights were cancelled . </t>")
    assert ("What was cancelled?", "Flights") in {(qa.question, qa.answer) for qa in pairs}
    reply = "Question: Who won?\nAnswer: the team\nQuestion: When did someone win?\nAnswer: on Sunday\nnoise"
    assert [(qa.question, qa.answer) for qa in parse_generated_pairs(reply, "won")] == [
        ("Who won?", "the team"), ("When did someone win?", "on Sunday")
    ]


def test_llm_qa_generator_uses_the_protocol_prompt_and_keeps_sentence_spans(chat_server):
    from annotation.automation.qa_generation import LLMQAGenerator

    FakeChat.failures = 1  # retried
    FakeChat.replies = ["Question: Who opened something?\nAnswer: The mayor\nQuestion: What did someone open?\nAnswer: a spaceship"]
    generator = LLMQAGenerator(model="tiny", base_url=chat_server, retries=2, backoff=0.01)
    pairs = generator.generate_for_text("The mayor opened a park.")
    assert [(qa.predicate, qa.question, qa.answer) for qa in pairs] == [("opened", "Who opened something?", "The mayor")]
    sent = FakeChat.requests[-1]["messages"]
    assert "Question: ...?" in sent[0]["content"] and sent[1]["content"] == "Sentence: The mayor opened a park.\nVerb: opened"


@pytest.mark.django_db
def test_llm_judge_in_an_autoscore_run_takes_shots_from_other_references(chat_server, gold_campaign, settings,
                                                                          django_capture_on_commit_callbacks):
    from annotation.automation.judges import registry
    from annotation.automation.autoscore import start_autoscore_run

    settings.LLM_BASE_URL, settings.LLM_MODEL, settings.LLM_SHOTS = chat_server, "tiny", 2
    registry.forget_judges()
    with django_capture_on_commit_callbacks(execute=True):
        run = start_autoscore_run(gold_campaign, "llm")
    run.refresh_from_db()
    registry.forget_judges()
    assert run.state == "finished" and run.judge_version == "llm-2/tiny/2-shot"
    assert run.results["judge"]["shots"] == 2 and run.results["judge"]["shot_sampling"] == "random"
    assert len(FakeChat.requests) == 27 and run.results["presence"]["n"] == 27
    for body in FakeChat.requests:
        question = body["messages"][-1]["content"]
        shots = " ".join(m["content"] for m in body["messages"][1:-1])
        assert len(body["messages"]) == 6
        # The summary judged and its reference's units never appear among the examples.
        own_summary = question.split("Summary:\n")[1].split("\n\n")[0]
        assert own_summary not in shots


@pytest.mark.django_db
def test_the_judges_page_says_how_many_shots_a_run_used(chat_server, gold_campaign, researcher, settings,
                                                         django_capture_on_commit_callbacks):
    from django.test import Client

    from annotation.automation.autoscore import start_autoscore_run
    from annotation.automation.judges import registry
    from annotation.models import Campaign, GoldPresence

    Campaign.objects.filter(pk=gold_campaign.pk).update(owner=researcher)
    settings.LLM_BASE_URL, settings.LLM_MODEL, settings.LLM_SHOTS = chat_server, "tiny", 5
    client = Client()
    client.force_login(researcher)
    registry.forget_judges()
    with django_capture_on_commit_callbacks(execute=True):
        start_autoscore_run(gold_campaign, "llm")
    html = client.get(f"/campaigns/{gold_campaign.slug}/judges/").content.decode()
    assert 'data-figure="shots">5-shot, random from other references' in html
    # Without gold there is nothing to draw examples from: the run is zero-shot and the page says so.
    GoldPresence.objects.filter(summary__system__campaign=gold_campaign).delete()
    FakeChat.requests.clear()
    with django_capture_on_commit_callbacks(execute=True):
        run = start_autoscore_run(gold_campaign, "llm")
    registry.forget_judges()
    run.refresh_from_db()
    assert run.judge_version == "llm-2/tiny/0-shot" and run.results["judge"]["shots"] == 0
    assert all(len(body["messages"]) == 2 for body in FakeChat.requests)
    html = client.get(f"/campaigns/{gold_campaign.slug}/judges/").content.decode()
    assert 'data-figure="shots">0-shot (not 5: the campaign has no gold labels to draw examples from)' in html
    assert "5-shot" not in html
