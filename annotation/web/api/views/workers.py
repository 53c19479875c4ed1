"""A campaign's workers: the list with status and figures, one worker's view (issue 40) and their HITs, and the
decisions about them (exclude, include, block, unblock).  Reads come from ``annotation.selectors.worker_view``,
as the worker page's; approving, rejecting and paying a bonus stay on ``assignments/ID/``."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers as drf_serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from annotation.selectors.campaigns import campaign_worker, campaign_workers
from annotation.selectors.worker_view import campaign_member, hit_rows, worker_assignments, worker_summary
from annotation.services import quality
from annotation.web.api import serializers
from annotation.web.api.views.common import DETAIL, CampaignScoped, Conflict, scoped_schema
from hits import qualifications
from hits.models import Worker


class WorkerMoneySerializer(drf_serializers.Serializer):
    """The worker's money in the campaign, from the ledger (USD, decimal strings), as on the payout report."""

    approved = drf_serializers.IntegerField()
    awaiting_review = drf_serializers.IntegerField()
    rejected = drf_serializers.IntegerField()
    rewards = drf_serializers.DecimalField(max_digits=10, decimal_places=2)
    bonuses = drf_serializers.DecimalField(max_digits=10, decimal_places=2)
    owed = drf_serializers.DecimalField(max_digits=10, decimal_places=2)
    paid = drf_serializers.DecimalField(max_digits=10, decimal_places=2)
    fees = drf_serializers.DecimalField(max_digits=10, decimal_places=2)
    awaiting_amount = drf_serializers.DecimalField(max_digits=10, decimal_places=2)


class WorkerTimeSerializer(drf_serializers.Serializer):
    """As on the worker status page: HITs held now, done, returned, timed out, time and hourly pay."""

    active = drf_serializers.IntegerField()
    done = drf_serializers.IntegerField()
    returned = drf_serializers.IntegerField()
    timed_out = drf_serializers.IntegerField()
    median_seconds = drf_serializers.FloatField(allow_null=True)
    hours_worked = drf_serializers.FloatField()
    earned = drf_serializers.DecimalField(max_digits=10, decimal_places=2)
    hourly = drf_serializers.DecimalField(max_digits=10, decimal_places=2, allow_null=True)


class WorkerTestSerializer(drf_serializers.Serializer):
    task_type = drf_serializers.CharField(source="task_type.slug")
    state = drf_serializers.CharField()
    attempts = drf_serializers.IntegerField()
    score = drf_serializers.FloatField(allow_null=True)
    reason = drf_serializers.CharField()
    last_attempt_at = drf_serializers.DateTimeField(allow_null=True)


class WorkerEventSerializer(drf_serializers.Serializer):
    """A decision about the worker (this campaign's, or a platform-wide block by an admin)."""

    created_at = drf_serializers.DateTimeField()
    action = drf_serializers.CharField()
    task_type = drf_serializers.CharField(source="task_type.slug", default=None, allow_null=True)
    decided_by = drf_serializers.CharField(source="decided_by.username", default=None, allow_null=True)
    automatic = drf_serializers.BooleanField()
    reason = drf_serializers.CharField()
    platform_wide = drf_serializers.SerializerMethodField()

    def get_platform_wide(self, event) -> bool:
        return event.batch_id is None


class WorkerDetailSerializer(drf_serializers.Serializer):
    """One worker of the campaign: who, blocks, status and figures, time, money, tests and decisions."""

    id = drf_serializers.IntegerField(source="worker.pk")
    worker = drf_serializers.CharField(source="worker.external_id")
    mturk_worker_id = drf_serializers.CharField(source="worker.mturk_worker_id", allow_null=True)
    prolific_pid = drf_serializers.CharField(source="worker.prolific_pid", allow_null=True)
    blocked = drf_serializers.BooleanField(source="worker.blocked", help_text="Blocked from the whole platform (an admin's decision).")
    blocked_here = drf_serializers.BooleanField(help_text="Blocked from this campaign.")
    block_reason = drf_serializers.CharField(allow_blank=True)
    status = drf_serializers.DictField(child=drf_serializers.CharField(), help_text="Per task type, as on the workers page.")
    figures = drf_serializers.JSONField(allow_null=True, help_text="Per task type: each check's value, n, threshold and status.")
    judgments = drf_serializers.IntegerField()
    excluded = drf_serializers.IntegerField(help_text="Judgments left out of the gold labels.")
    hits = drf_serializers.IntegerField(help_text="Assignments of the campaign's HITs, whatever their state.")
    time = WorkerTimeSerializer(allow_null=True)
    money = WorkerMoneySerializer(allow_null=True)
    qualifications = WorkerTestSerializer(many=True)
    events = WorkerEventSerializer(many=True)


class WorkerHitSerializer(drf_serializers.Serializer):
    """One of the worker's assignments with its answers, review, money, check and agreement."""

    id = drf_serializers.IntegerField(source="assignment.pk")
    hit = drf_serializers.IntegerField(source="assignment.hit_id")
    task_type = drf_serializers.CharField(source="assignment.hit.task_type.slug")
    kind = drf_serializers.CharField(source="assignment.hit.kind", help_text="regular, gold or qualification.")
    state = drf_serializers.CharField(source="assignment.state")
    accepted_at = drf_serializers.DateTimeField(source="assignment.accepted_at")
    submitted_at = drf_serializers.DateTimeField(source="assignment.submitted_at", allow_null=True)
    work_seconds = drf_serializers.IntegerField(source="assignment.work_seconds", allow_null=True)
    answers = drf_serializers.JSONField(source="assignment.answers", allow_null=True)
    reviewed_at = drf_serializers.DateTimeField(source="assignment.reviewed_at", allow_null=True)
    review_message = drf_serializers.CharField(source="assignment.review_message")
    reward = drf_serializers.DecimalField(source="assignment.hit.reward", max_digits=6, decimal_places=2)
    bonus = drf_serializers.DecimalField(source="assignment.bonus", max_digits=6, decimal_places=2)
    check = drf_serializers.JSONField(allow_null=True, help_text="Gold and test items: right of total against the key.")
    agreement = drf_serializers.JSONField(allow_null=True, help_text="Presence: labels agreeing with the majority; verification: with the other verifier.")
    kept = drf_serializers.JSONField(allow_null=True, help_text="Generation: QA pairs written, kept and decided.")


class BlockSerializer(drf_serializers.Serializer):
    reason = drf_serializers.CharField(max_length=400, required=False, allow_blank=True, default="", help_text="Shown to the worker.")


@scoped_schema
class WorkerViewSet(CampaignScoped, viewsets.GenericViewSet):
    """Workers who did HITs of the campaign, with their status and quality figures; one worker's view and HITs;
    exclude, include, block or unblock them."""

    serializer_class = serializers.WorkerRowSerializer
    filter_backends: list = []
    queryset = Worker.objects.none()

    @extend_schema(responses={200: serializers.WorkerRowSerializer(many=True)})
    def list(self, request, *args, **kwargs):
        rows = campaign_workers(self.campaign)
        page = self.paginate_queryset(rows)
        return self.get_paginated_response(serializers.WorkerRowSerializer(page, many=True).data)

    def _member(self) -> Worker:
        # A worker with work in this campaign; any other id (another campaign's worker, none at all) is the same 404.
        worker = campaign_member(self.campaign, int(self.kwargs["pk"]))
        if worker is None:
            raise NotFound("No such worker in this campaign.")
        return worker

    @extend_schema(responses={200: WorkerDetailSerializer, 404: DETAIL})
    def retrieve(self, request, *args, **kwargs):
        """The worker view: status and figures, time and hourly pay, money, this campaign's block, tests and decisions."""
        worker = self._member()
        summary = worker_summary(self.campaign, worker)
        activity, pay, row = summary["activity"], summary["pay"], summary["row"]
        data = {
            "worker": worker, "blocked_here": summary["campaign_block"] is not None,
            "block_reason": summary["campaign_block"].reason if summary["campaign_block"] is not None else "",
            "status": row["status"] if row else {}, "figures": row["figures"] if row else None,
            "judgments": summary["judgments"], "excluded": summary["excluded"],
            "hits": worker_assignments(self.campaign, worker).count(),
            "time": None if activity is None else {
                "active": activity.active, "done": activity.done, "returned": activity.returned, "timed_out": activity.timed_out,
                "median_seconds": activity.median_seconds, "hours_worked": summary["hours_worked"],
                "earned": activity.earned, "hourly": activity.hourly,
            },
            "money": pay, "qualifications": summary["qualifications"], "events": summary["events"],
        }
        return Response(WorkerDetailSerializer(data).data)

    @extend_schema(responses={200: WorkerHitSerializer(many=True), 404: DETAIL})
    @action(detail=True, methods=["get"])
    def hits(self, request, campaign_slug=None, pk=None):
        """The worker's assignments of the campaign's HITs, newest first, with answers, review, check and agreement."""
        worker = self._member()
        page = self.paginate_queryset(worker_assignments(self.campaign, worker))
        return self.get_paginated_response(WorkerHitSerializer(hit_rows(self.campaign, page), many=True).data)

    def _block(self, request, blocked: bool) -> Response:
        self.require_manager()
        worker = self._member()
        form = BlockSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        if campaign_worker(self.campaign, worker.external_id) is None:
            raise Conflict(f"{worker} took no HIT of this campaign: there is nothing to block them from.")
        who = request.user.get_username()
        reason = form.validated_data["reason"].strip() or f"{'blocked' if blocked else 'unblocked'} by {who}"
        changed = qualifications.set_batch_blocked(worker, self.campaign.batch, blocked, reason, by=request.user)
        return Response({"blocked_here": blocked, "changed": changed})

    BLOCK_RESPONSE = {200: OpenApiTypes.OBJECT, 400: DETAIL, 404: DETAIL, 409: DETAIL}

    @extend_schema(request=BlockSerializer, responses=BLOCK_RESPONSE)
    @action(detail=True, methods=["post"])
    def block(self, request, campaign_slug=None, pk=None):
        """Keep the worker out of this campaign (logged with who and why); ``changed`` is false when already blocked."""
        return self._block(request, True)

    @extend_schema(request=BlockSerializer, responses=BLOCK_RESPONSE)
    @action(detail=True, methods=["post"])
    def unblock(self, request, campaign_slug=None, pk=None):
        """Let the worker back into this campaign; ``changed`` is false when they were not blocked."""
        return self._block(request, False)

    def _worker(self, form) -> Worker:
        # As the workers page: only a worker of this campaign, and the same 404 for a name unknown anywhere,
        # so the endpoint neither touches other campaigns' workers nor tells who is registered.
        worker = campaign_worker(self.campaign, form.validated_data["worker"])
        if worker is None:
            raise NotFound("No such worker in this campaign.")
        return worker

    @extend_schema(request=serializers.WorkerActionSerializer, responses={200: OpenApiTypes.OBJECT, 400: DETAIL})
    @action(detail=False, methods=["post"])
    def exclude(self, request, campaign_slug=None):
        """Leave a worker's presence judgments out of the gold labels (optionally re-opening their places)."""
        self.require_manager()
        form = serializers.WorkerActionSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        worker = self._worker(form)
        from hits.services import PlacesRefused

        try:
            return Response(quality.exclude_worker(self.campaign, worker, by=request.user, replace=form.validated_data["replace"]))
        except PlacesRefused as exc:
            raise ValidationError({"detail": f"nothing was excluded: {exc}"}) from None

    @extend_schema(request=serializers.WorkerActionSerializer, responses={200: OpenApiTypes.OBJECT, 400: DETAIL})
    @action(detail=False, methods=["post"])
    def include(self, request, campaign_slug=None):
        """Undo an exclusion: the worker's judgments count again."""
        self.require_manager()
        form = serializers.WorkerActionSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        worker = self._worker(form)
        return Response(quality.include_worker(self.campaign, worker, by=request.user))
