"""The views of ``bench/floor_asgi.py``: a plain answer, the same as a DRF view (no
authentication or permission classes: DRF's own machinery), one durable insert, and one
read of a row by its key."""

from __future__ import annotations

from django.db import connection, transaction
from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

TABLE = "bench_floor_rows"


@csrf_exempt
def bare(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"ok": True, "n": len(request.body)})


@csrf_exempt
def commit(request: HttpRequest) -> JsonResponse:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {TABLE} (data) VALUES (%s)", [request.body.decode()])  # noqa: S608 - a constant
    return JsonResponse({"ok": True})


@csrf_exempt
def read(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id, data FROM {TABLE} WHERE id = %s", [1])  # noqa: S608 - a constant
        row = cursor.fetchone()
    return JsonResponse({"ok": row is not None})


class Bare(APIView):
    authentication_classes = ()
    permission_classes = ()

    def post(self, request: Request) -> Response:
        return Response({"ok": True, "n": len(request.body)})


urlpatterns = [path("bare", bare), path("drf", Bare.as_view()), path("commit", commit), path("read", read)]
