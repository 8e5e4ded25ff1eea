"""REST API v1: the notes' tiny transformer on Iris, trained in background jobs with an event stream."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/api/v1/iris", tags=["iris"])
