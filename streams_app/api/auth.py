"""``/api/v1/me/`` and ``/api/v1/auth/token/``: the signed-in user, and exchanging a password for
an API token (``Authorization: Token <key>``)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from streams_app import selectors
from streams_app.api.authentication import cooloff_seconds, is_locked_out, lockout_message
from streams_app.api.parsers import BoundedJSONParser
from streams_app.models import Inbox
from streams_app.services.api_tokens import api_token_create
from streams_app.services.users import inbox_url


class InboxSerializer(serializers.Serializer):
    """An inbox and the URL NOTIFY clauses name to reach it."""

    name = serializers.CharField()
    url = serializers.SerializerMethodField()

    def get_url(self, inbox: Inbox) -> str:
        return inbox_url(inbox=inbox)


class MeSerializer(serializers.Serializer):
    """The signed-in user and the inboxes they own."""

    username = serializers.CharField(source="get_username")
    is_staff = serializers.BooleanField()
    inboxes = serializers.SerializerMethodField()

    @extend_schema_field(InboxSerializer(many=True))
    def get_inboxes(self, user: Any) -> Any:
        return InboxSerializer(selectors.inboxes_owned(user=user), many=True).data


class MeApi(APIView):
    """The signed-in user and the URL of their inbox for NOTIFY clauses."""

    @extend_schema(responses=MeSerializer)
    def get(self, request: Request) -> Response:
        return Response(MeSerializer(request.user).data)


class AuthTokenApi(APIView):
    """Exchange a username and password for a new API token (``Authorization: Token <key>``).

    Every call creates a token; its key is in this answer only (the server keeps its SHA-256).
    A user's tokens stay valid until their password changes. Repeated failed passwords of one user
    name from one address are refused for a while without a check (HTTP 429)."""

    authentication_classes = ()
    permission_classes = ()
    parser_classes = (FormParser, MultiPartParser, BoundedJSONParser)
    renderer_classes = (JSONRenderer,)

    @extend_schema(
        operation_id="v1_auth_token_create",
        request=AuthTokenSerializer,
        responses={
            200: inline_serializer("AuthToken", {"token": serializers.CharField()}),
            400: OpenApiTypes.OBJECT,
            429: OpenApiTypes.OBJECT,
        },
        auth=[],
    )
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        # the Django request: django-axes marks a refused check on it (request.axes_locked_out)
        data = AuthTokenSerializer(data=request.data, context={"request": request._request})
        valid = data.is_valid()
        if is_locked_out(request._request):
            return Response(
                {"detail": lockout_message()}, status=429, headers={"Retry-After": str(cooloff_seconds())}
            )
        if not valid:
            raise ValidationError(data.errors)
        _token, key = api_token_create(user=data.validated_data["user"])
        return Response({"token": key})
