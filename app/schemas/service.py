"""/health's answer (app/routes/service.py)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Jobs(BaseModel):
    queued: int = Field(description="Model jobs waiting or running now.")
    dropped: int = Field(description="Queued jobs dropped because their client disconnected first.")


class Health(BaseModel):
    status: str
    version: str = Field(description="attnscope's version (exports carry it).")
    jobs: Jobs
