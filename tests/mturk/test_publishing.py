"""Publishing on MTurk, every call checked with botocore's Stubber against the exact parameters."""

from __future__ import annotations

from decimal import Decimal

import pytest

from hits.models import HIT
from hits.mturk.client import MTurkError
from hits.mturk.models import MTurkHIT, MTurkQualificationType
from hits.mturk.publishing import PublishRefused, planned_requests, publish_batch, request_token
from tests.mturk.conftest import make_hit, with_test_of

pytestmark = pytest.mark.django_db

QUESTION = (
    '<ExternalQuestion xmlns="http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/ExternalQuestion.xsd">'
    "<ExternalURL>https://studio.example.org/work/mturk/hit/</ExternalURL><FrameHeight>900</FrameHeight></ExternalQuestion>"
)


@pytest.fixture(autouse=True)
def public_url(settings):
    settings.PUBLIC_BASE_URL = "https://studio.example.org"
    settings.MTURK_FRAME_HEIGHT = 900
    settings.MTURK_HIT_LIFETIME = 604800
    settings.MTURK_AUTO_APPROVAL_DELAY = 259200
    settings.MTURK_LOCALES = []
    settings.MTURK_MIN_APPROVAL_RATE = 0
    settings.MTURK_MAX_RETRIES = 2


def expected_create(hit: HIT, **changes) -> dict:
    params = {
        "Title": "Label it",
        "Description": "Label one thing.",
        "Keywords": "label, test",
        "Reward": "0.20",
        "MaxAssignments": 3,
        "AssignmentDurationInSeconds": 600,
        "LifetimeInSeconds": 604800,
        "AutoApprovalDelayInSeconds": 259200,
        "Question": QUESTION,
        "RequesterAnnotation": request_token(hit),
        "UniqueRequestToken": request_token(hit),
    }
    params.update(changes)
    return params


def created(hit_id: str) -> dict:
    return {"HIT": {"HITId": hit_id, "HITTypeId": "TYPE1"}}


def test_publish_creates_one_mturk_hit_per_local_hit(stubbed, mturk_batch, task_type):
    hits = [make_hit(mturk_batch, task_type) for _ in range(2)]
    # 2 HITs x 3 assignments x ($0.20 + $0.04 commission) = $1.44 must be covered.
    stubbed.add_response("get_account_balance", {"AvailableBalance": "1.44"}, {})
    stubbed.add_response("create_hit", created("AAA1"), expected_create(hits[0]))
    stubbed.add_response("create_hit", created("AAA2"), expected_create(hits[1]))
    report = publish_batch(mturk_batch)
    assert report.published == 2 and report.remaining == 0 and report.committed == "1.44"
    assert dict(MTurkHIT.objects.values_list("hit_id", "mturk_hit_id")) == {hits[0].pk: "AAA1", hits[1].pk: "AAA2"}
    # A second run has nothing to do: no AWS call at all (the Stubber would fail on an unexpected one).
    assert publish_batch(mturk_batch).published == 0


def test_publish_interrupted_half_way_is_finished_without_duplicates(stubbed, mturk_batch, task_type):
    """Issue 9 fault: CreateHIT of the 2nd HIT succeeds on MTurk but the answer is lost (ServiceFault on every try).

    The lost answer is ambiguous: the account's HITs are read at once (ListHITs), without the HIT yet. The next
    run sends the same UniqueRequestToken, MTurk says the HIT exists, and the HIT is found by its
    RequesterAnnotation (ListHITs, second page) instead of created again.
    """
    hits = [make_hit(mturk_batch, task_type) for _ in range(3)]
    fault = dict(service_error_code="ServiceFault", service_message="We encountered an unexpected error.", http_status_code=500)
    stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    stubbed.add_response("create_hit", created("AAA1"), expected_create(hits[0]))
    for _ in range(3):  # first try + MTURK_MAX_RETRIES (2)
        stubbed.add_client_error("create_hit", expected_params=expected_create(hits[1]), **fault)
    stubbed.add_response("list_hits", {"NumResults": 1, "HITs": [{"HITId": "AAA1", "RequesterAnnotation": request_token(hits[0])}]}, {"MaxResults": 100})
    with pytest.raises(MTurkError, match="ServiceFault"):
        publish_batch(mturk_batch)
    assert list(MTurkHIT.objects.values_list("mturk_hit_id", flat=True)) == ["AAA1"]

    stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    stubbed.add_client_error(
        "create_hit",
        service_error_code="RequestError",
        service_message=f"a HIT with UniqueRequestToken {request_token(hits[1])} already exists",
        modeled_fields={"TurkErrorCode": "AWS.MechanicalTurk.HitAlreadyExists"},
        http_status_code=400,
        expected_params=expected_create(hits[1]),
    )
    stubbed.add_response(
        "list_hits",
        {"NextToken": "page2", "NumResults": 1, "HITs": [{"HITId": "AAA1", "RequesterAnnotation": request_token(hits[0])}]},
        {"MaxResults": 100},
    )
    stubbed.add_response(
        "list_hits",
        {"NumResults": 1, "HITs": [{"HITId": "AAA2", "HITTypeId": "TYPE1", "RequesterAnnotation": request_token(hits[1])}]},
        {"MaxResults": 100, "NextToken": "page2"},
    )
    stubbed.add_response("create_hit", created("AAA3"), expected_create(hits[2]))
    report = publish_batch(mturk_batch)
    assert report.published == 2 and report.recovered == 1
    assert sorted(MTurkHIT.objects.values_list("mturk_hit_id", flat=True)) == ["AAA1", "AAA2", "AAA3"]
    assert MTurkHIT.objects.get(mturk_hit_id="AAA2").hit_id == hits[1].pk


def test_throttled_call_is_retried(stubbed, mturk_batch, task_type):
    hit = make_hit(mturk_batch, task_type)
    stubbed.add_response("get_account_balance", {"AvailableBalance": "10.00"}, {})
    stubbed.add_client_error(
        "create_hit", service_error_code="ThrottlingException", service_message="Rate exceeded", http_status_code=400,
        expected_params=expected_create(hit),
    )
    stubbed.add_response("create_hit", created("AAA1"), expected_create(hit))
    assert publish_batch(mturk_batch).published == 1


def test_request_error_is_not_retried(stubbed, mturk_batch, task_type):
    hit = make_hit(mturk_batch, task_type)
    stubbed.add_response("get_account_balance", {"AvailableBalance": "10.00"}, {})
    stubbed.add_client_error(
        "create_hit", service_error_code="RequestError", service_message="Reward is not valid", http_status_code=400,
        expected_params=expected_create(hit),
    )
    report = publish_batch(mturk_batch)  # one call only (the Stubber has no second answer); kept on the HIT
    assert report.published == 0 and not MTurkHIT.objects.exists()
    hit.refresh_from_db()
    assert "Reward is not valid" in hit.publish_error


def test_budget_cap_stops_publishing(stubbed, mturk_batch, task_type):
    mturk_batch.budget_cap = Decimal("1.50")
    mturk_batch.save()
    hits = [make_hit(mturk_batch, task_type) for _ in range(3)]  # $0.72 each
    stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    stubbed.add_response("create_hit", created("AAA1"), expected_create(hits[0]))
    stubbed.add_response("create_hit", created("AAA2"), expected_create(hits[1]))
    report = publish_batch(mturk_batch)
    assert report.published == 2 and report.remaining == 1 and "budget cap of $1.50" in report.stopped
    # Still capped on the next run: nothing is sent.
    assert publish_batch(mturk_batch).published == 0
    assert not MTurkHIT.objects.filter(hit=hits[2]).exists()


def test_balance_that_cannot_cover_the_hits_refuses_the_publish(stubbed, mturk_batch, task_type):
    make_hit(mturk_batch, task_type)
    make_hit(mturk_batch, task_type)
    stubbed.add_response("get_account_balance", {"AvailableBalance": "1.43"}, {})
    with pytest.raises(PublishRefused, match=r"balance of \$1.43 cannot cover \$1.44"):
        publish_batch(mturk_batch)
    assert not MTurkHIT.objects.exists()


def test_qualification_types_gold_and_tests_map_to_mturk(stubbed, mturk_batch, task_type, settings):
    """The batch's qualification type is created once and reused; tests get 9 assignments and pay MTurk's minimum; a
    gold HIT waits for the regular HITs it sits among and gets their places."""
    settings.MTURK_LOCALES = ["us", "GB"]
    settings.MTURK_MIN_APPROVAL_RATE = 95
    task_type.requires_qualification = True
    task_type.save()
    test = make_hit(mturk_batch, task_type, kind=HIT.Kind.QUALIFICATION, max_assignments=32767, reward=Decimal("0"))
    gold = make_hit(mturk_batch, task_type, kind=HIT.Kind.GOLD, max_assignments=32767)
    guard = {"ActionsGuarded": "DiscoverPreviewAndAccept"}
    extra = [
        {"QualificationTypeId": "00000000000000000071", "Comparator": "In", "LocaleValues": [{"Country": "US"}, {"Country": "GB"}], **guard},
        {"QualificationTypeId": "000000000000000000L0", "Comparator": "GreaterThanOrEqualTo", "IntegerValues": [95], **guard},
    ]
    stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    stubbed.add_response(
        "create_qualification_type",
        {"QualificationType": {"QualificationTypeId": "QUAL1", "Name": f"qapyr Label it (label, campaign {mturk_batch.key})"}},
        {
            "Name": f"qapyr Label it (label, campaign {mturk_batch.key})", "Keywords": "label, test",
            "Description": "Passed the qualification test for 'Label it' HITs of one campaign.", "QualificationTypeStatus": "Active",
        },
    )
    stubbed.add_response("create_hit", created("TEST1"), expected_create(
        test, Title="Qualification test: Label it", Reward="0.01", MaxAssignments=9,
        QualificationRequirements=[{"QualificationTypeId": "QUAL1", "Comparator": "DoesNotExist", **guard}, *extra],
    ))
    publish_batch(mturk_batch)
    # A later regular HIT reuses the qualification type: no second CreateQualificationType.
    regular = make_hit(mturk_batch, task_type)
    stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    stubbed.add_response("create_hit", created("GOLD1"), expected_create(
        gold, MaxAssignments=3, QualificationRequirements=[{"QualificationTypeId": "QUAL1", "Comparator": "Exists", **guard}, *extra],
    ))
    stubbed.add_response("create_hit", created("REG1"), expected_create(
        regular, QualificationRequirements=[{"QualificationTypeId": "QUAL1", "Comparator": "Exists", **guard}, *extra],
    ))
    publish_batch(mturk_batch)
    assert MTurkQualificationType.objects.get().qualification_type_id == "QUAL1"
    assert MTurkQualificationType.objects.get().batch == mturk_batch
    assert MTurkHIT.objects.get(mturk_hit_id="GOLD1").max_assignments == 3


def test_each_campaign_gets_its_own_qualification_type(stubbed, mturk_batch, task_type):
    """Two MTurk campaigns of one task type: two qualification types, each campaign's HITs require only its own
    (a revocation in one must not close the other on MTurk); an old per-task-type type is not reused."""
    from hits.models import Batch

    task_type.requires_qualification = True
    task_type.save()
    MTurkQualificationType.objects.create(task_type=task_type, sandbox=True, qualification_type_id="OLD", name="old")
    other = Batch.objects.create(name="Second campaign", reference="test:3", backend=Batch.Backend.MTURK_SANDBOX)
    guard = {"ActionsGuarded": "DiscoverPreviewAndAccept"}
    for batch, type_id in ((mturk_batch, "QUALA"), (other, "QUALB")):
        with_test_of(batch, task_type)
        hit = make_hit(batch, task_type)
        name = f"qapyr Label it (label, campaign {batch.key})"
        stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
        stubbed.add_response(
            "create_qualification_type",
            {"QualificationType": {"QualificationTypeId": type_id, "Name": name}},
            {
                "Name": name, "Keywords": "label, test",
                "Description": "Passed the qualification test for 'Label it' HITs of one campaign.", "QualificationTypeStatus": "Active",
            },
        )
        stubbed.add_response("create_hit", created(f"HIT{type_id}"), expected_create(
            hit, QualificationRequirements=[{"QualificationTypeId": type_id, "Comparator": "Exists", **guard}],
        ))
        publish_batch(batch)
    assert dict(MTurkQualificationType.objects.filter(batch__isnull=False).values_list("batch_id", "qualification_type_id")) == {
        mturk_batch.pk: "QUALA", other.pk: "QUALB",
    }
    # The plan of a campaign shows its own type.
    make_hit(other, task_type)
    [request] = planned_requests(other)
    assert request["QualificationRequirements"][0]["QualificationTypeId"] == "QUALB"


def test_campaign_type_made_earlier_is_found_by_name(stubbed, mturk_batch, task_type):
    """An interrupted publish created the campaign's type but did not record it: MTurk refuses the name, the type
    is found by it (ListQualificationTypes) and recorded for this batch."""
    task_type.requires_qualification = True
    task_type.save()
    with_test_of(mturk_batch, task_type)
    hit = make_hit(mturk_batch, task_type)
    name = f"qapyr Label it (label, campaign {mturk_batch.key})"
    stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    stubbed.add_client_error(
        "create_qualification_type", service_error_code="RequestError",
        service_message=f"You have already created a QualificationType with this name: {name}", http_status_code=400,
        modeled_fields={"TurkErrorCode": "AWS.MechanicalTurk.QualificationTypeAlreadyExists"},
    )
    stubbed.add_response(
        "list_qualification_types",
        {"QualificationTypes": [{"QualificationTypeId": "OTHER", "Name": name + " x"}, {"QualificationTypeId": "QUALA", "Name": name}]},
        {"Query": name, "MustBeRequestable": False, "MustBeOwnedByCaller": True, "MaxResults": 100},
    )
    stubbed.add_response("create_hit", created("HIT1"), expected_create(
        hit, QualificationRequirements=[{"QualificationTypeId": "QUALA", "Comparator": "Exists", "ActionsGuarded": "DiscoverPreviewAndAccept"}],
    ))
    publish_batch(mturk_batch)
    record = MTurkQualificationType.objects.get()
    assert (record.batch, record.qualification_type_id, record.name) == (mturk_batch, "QUALA", name)


def test_publishing_needs_https_and_an_mturk_batch(mturk_batch, local_batch, task_type, settings):
    make_hit(mturk_batch, task_type)
    with pytest.raises(PublishRefused, match="local workers"):
        publish_batch(local_batch)
    settings.PUBLIC_BASE_URL = "http://127.0.0.1:8000"
    with pytest.raises(PublishRefused, match="https"):
        publish_batch(mturk_batch)


def test_planned_requests_need_no_aws(mturk_batch, task_type):
    task_type.requires_qualification = True
    task_type.save()
    with_test_of(mturk_batch, task_type)
    hit = make_hit(mturk_batch, task_type)
    [request] = planned_requests(mturk_batch)
    assert request["UniqueRequestToken"] == request_token(hit)
    assert request["QualificationRequirements"][0]["QualificationTypeId"] == "<created on first publish: label>"


def test_large_batch_publishes_in_chained_celery_chunks(stubbed, mturk_batch, task_type, settings):
    """The task publishes MTURK_PUBLISH_CHUNK HITs, then queues itself for the rest (eager here): 5 HITs, chunks of 2."""
    from hits.mturk.publishing import progress
    from hits.mturk.tasks import publish_batch_task

    settings.MTURK_PUBLISH_CHUNK = 2
    hits = [make_hit(mturk_batch, task_type) for _ in range(5)]
    for start in range(0, 5, 2):
        stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
        for hit in hits[start : start + 2]:
            stubbed.add_response("create_hit", created(f"AAA{hit.pk}"), expected_create(hit))
    first = publish_batch_task.delay(mturk_batch.pk).get()
    assert first["published"] == 2 and first["remaining"] == 3
    assert progress(mturk_batch) == {"on_mturk": 5, "waiting": 0, "committed": "3.60", "budget_cap": None}


def test_unpaid_gold_hit_waits_for_regular_hits_of_its_type(stubbed, mturk_batch, task_type):
    gold = make_hit(mturk_batch, task_type, kind=HIT.Kind.GOLD, max_assignments=32767, reward=Decimal("0"))
    assert planned_requests(mturk_batch) == []
    assert publish_batch(mturk_batch).published == 0  # no AWS call either
    regular = make_hit(mturk_batch, task_type, reward=Decimal("0.25"))
    stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    stubbed.add_response("create_hit", created("GOLD"), expected_create(gold, MaxAssignments=3, Reward="0.25"))
    stubbed.add_response("create_hit", created("REG"), expected_create(regular, Reward="0.25"))
    assert publish_batch(mturk_batch).published == 2


def test_a_paused_batch_publishes_nothing(stubbed, mturk_batch, task_type):
    from hits.models import Batch

    make_hit(mturk_batch, task_type)
    mturk_batch.state = Batch.State.PAUSED
    report = publish_batch(mturk_batch)
    assert (report.published, report.remaining, report.stopped) == (0, 1, "the batch is paused")


def test_a_batch_without_its_own_test_requires_no_qualification_type(mturk_batch, task_type):
    """Another campaign testing the same task type must not hide this campaign's HITs behind a type nobody here can
    be granted: only a batch that tests the task type requires its MTurk type (as the local hand-out decides)."""
    from hits.models import Batch

    task_type.requires_qualification = True  # set by any campaign defining a test of this task type
    task_type.save()
    with_test_of(mturk_batch, task_type)
    untested = Batch.objects.create(name="No test", reference="test:untested", backend=Batch.Backend.MTURK_SANDBOX)
    make_hit(mturk_batch, task_type)
    make_hit(untested, task_type)
    [tested_request] = planned_requests(mturk_batch)
    [open_request] = planned_requests(untested)
    assert [r["Comparator"] for r in tested_request["QualificationRequirements"]] == ["Exists"]
    assert open_request.get("QualificationRequirements", []) == []


def test_a_refused_type_is_taken_as_existing_only_on_mturks_code(stubbed, mturk_batch, task_type):
    """A CreateQualificationType refusal whose message says "already" but whose TurkErrorCode is not
    QualificationTypeAlreadyExists is not a type made earlier: no search by name, the refusal stops the publish."""
    task_type.requires_qualification = True
    task_type.save()
    with_test_of(mturk_batch, task_type)
    make_hit(mturk_batch, task_type)
    stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    stubbed.add_client_error(
        "create_qualification_type", service_error_code="RequestError", http_status_code=400,
        service_message="Your account has already reached its limit of qualification types",
        modeled_fields={"TurkErrorCode": "AWS.MechanicalTurk.InvalidParameterValue"},
    )
    with pytest.raises(MTurkError, match="limit of qualification types"):
        publish_batch(mturk_batch)
    assert not MTurkQualificationType.objects.exists() and not MTurkHIT.objects.exists()
