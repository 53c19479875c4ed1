"""Messages to a campaign's workers (``/api/campaigns/<slug>/messages/``, issue 40): list what was sent, with every
copy's fate, and send one (to named workers or all of them) through the campaign's market (``hits.messaging``)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from annotation.web.api.views.common import DETAIL, CampaignScoped, scoped_schema
from hits import messaging
from hits.models import MessageRecipient, WorkerMessage


class RecipientSerializer(serializers.ModelSerializer):
    worker = serializers.CharField(source="worker.external_id")

    class Meta:
        model = MessageRecipient
        fields = ["worker", "status", "code", "detail", "emailed", "read_at", "updated_at"]


class MessageSerializer(serializers.ModelSerializer):
    sender = serializers.CharField(source="sender_name")
    recipients = RecipientSerializer(source="copies", many=True)

    class Meta:
        model = WorkerMessage
        fields = ["id", "key", "market", "sender", "subject", "body", "created_at", "sent_at", "recipients"]


class SendSerializer(serializers.Serializer):
    subject = serializers.CharField(max_length=1000, allow_blank=True, trim_whitespace=False)
    body = serializers.CharField(max_length=20000, allow_blank=True, trim_whitespace=False)
    workers = serializers.ListField(child=serializers.CharField(max_length=128), required=False, max_length=100000)
    all = serializers.BooleanField(required=False, default=False, help_text="Every worker of the campaign.")
    key = serializers.CharField(required=False, max_length=64, help_text="Yours: the same key again sends nothing more.")

    def validate(self, data):
        if bool(data.get("workers")) == data.get("all", False):
            raise ValidationError({"workers": ["Name the workers, or send all: true (one of the two)."]})
        return data


@scoped_schema
class MessageViewSet(CampaignScoped, viewsets.GenericViewSet):
    """Messages the campaign's researchers sent its workers, newest first, with each worker's delivery."""

    serializer_class = MessageSerializer
    filter_backends: list = []
    queryset = WorkerMessage.objects.none()

    def _log(self):
        return messaging.message_log(self.campaign.batch) if self.campaign.batch_id else []

    @extend_schema(responses={200: MessageSerializer(many=True)})
    def list(self, request, *args, **kwargs):
        self.require_manager()
        page = self.paginate_queryset(self._log())
        return self.get_paginated_response(MessageSerializer(page, many=True).data)

    @extend_schema(request=SendSerializer, responses={201: MessageSerializer, 200: MessageSerializer, 400: DETAIL})
    def create(self, request, *args, **kwargs):
        """Send a message (201); a ``key`` used before answers that message (200) and sends nothing."""
        self.require_manager()
        form = SendSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        batch = self.campaign.batch
        try:
            if batch is None:
                raise messaging.MessageRefused("the campaign has no workers yet")
            workers = messaging.batch_workers(batch, None if data["all"] else data["workers"])
            message, created = messaging.record_message(batch, request.user, data["subject"], data["body"], workers,
                                                        key=data.get("key"))
        except messaging.MessageRefused as exc:
            raise ValidationError({"detail": f"nothing was sent: {exc}"}) from None
        if created:
            messaging.deliver_soon(message, len(workers))  # to many workers: by a background job, copies "pending"
        shown = messaging.with_copies(message, message.recipients.select_related("worker"))
        return Response(MessageSerializer(shown).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

