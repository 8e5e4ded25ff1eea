"""A job's events as a server-sent event stream: the answer of every lab's GET …/train/{job}/events."""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi import Response
from sse_starlette import EventSourceResponse, ServerSentEvent

from .store import JobFiles


def event_stream(job: JobFiles, last_event_id: int | None) -> Response:
    """The events from the start, or after `last_event_id`; 204 when the job has finished and there are none."""
    start = 0 if last_event_id is None else last_event_id + 1
    if job.finished() and start >= job.count():
        return Response(status_code=204)
    events = job.follow(start)

    async def stream() -> AsyncIterator[ServerSentEvent]:
        async for index, (name, data) in events:
            yield ServerSentEvent(data=data, event=name, id=str(index))

    return EventSourceResponse(stream(), ping=15)


def event_schema(names: tuple[str, ...]) -> dict[str, object]:
    """One server-sent event as a client's parser reads it: its name, its id and its JSON data (a string)."""
    return {
        "type": "object",
        "required": ["event", "id", "data"],
        "properties": {
            "event": {"type": "string", "enum": list(names)},
            "id": {"type": "string", "pattern": "^[0-9]+$", "description": "The event's index in the job, from 0."},
            "data": {"type": "string", "contentMediaType": "application/json",
                     "description": "JSON: the event's fields, as the route's description lists them per event."},
        },
    }
