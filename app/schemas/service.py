"""/health's answer (app/routes/service.py)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class LaneReport(BaseModel):
    waiting: int = Field(description="Jobs queued for this lane's thread.")
    running: int = Field(description="Jobs running on it now (0 or 1).")
    done: int = Field(description="Jobs it has finished (or stopped) since the server started.")
    slices: int = Field(description="Slices of long work done: each time a running analysis checked whether to go on.")


class Jobs(BaseModel):
    queued: int = Field(description="Model jobs waiting or running now, on either lane.")
    dropped: int = Field(description="Queued jobs dropped because their client disconnected first.")
    interactive: LaneReport = Field(description="The lane of every view's forward (attention, trace, metrics, lens, "
                                    "a generated token).")
    background: LaneReport = Field(description="The lane of the long analyses (patching, attribution), in slices.")
    gave_way: int = Field(description="Times a long analysis (between two slices) or a lab's training (between two "
                          "batches) waited for the views' forwards to be done.")


class Health(BaseModel):
    status: str
    version: str = Field(description="attnscope's version (exports carry it).")
    jobs: Jobs
