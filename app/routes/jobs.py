"""What the routes of every training lab share: the job registry, the job id in the path, Last-Event-ID, the
documented refusals, and each lab's event stream and cancel routes (add_job_routes)."""

from __future__ import annotations

from typing import Annotated, Any, cast

from fastapi import APIRouter, Depends, Header, Path, Request, Response
from sse_starlette import EventSourceResponse

from model.analysis.work import JOB_SHARE

from ..jobs import KEEP_FINISHED, MAX_RUNNING, JobRegistry
from ..jobs.registry import Lab
from ..jobs.stream import event_schema, event_stream
from ..schemas.common import BODY_TOO_LARGE, NOT_UTF8, documented_error
from ..schemas.iris import JOB_DOC, JOB_PATTERN


def _jobs(request: Request) -> JobRegistry:
    return cast(JobRegistry, request.app.state.jobs)


Jobs = Annotated[JobRegistry, Depends(_jobs)]
JobPath = Annotated[str, Path(pattern=JOB_PATTERN, description=JOB_DOC)]
# An int defaulting to None rather than `int | None`: the schema then says "integer", not "integer or null"
# (a header has no null; a fuzzer would send the text "null").
LastEventId = Annotated[int, Header(ge=0, le=2**31 - 1, description="The id of the last event received (EventSource "
                                    "sends it when it reconnects); the stream goes on after it.")]

BODY_ERRORS: dict[int | str, dict[str, Any]] = {400: NOT_UTF8, 413: BODY_TOO_LARGE}
UNKNOWN_JOB = documented_error(
    "No such job of this lab: never started on this server (`errors[0].type` `unknown_job`), or finished and no "
    f"longer kept (`job_evicted`: the server keeps its {KEEP_FINISHED} latest finished jobs; train again)."
)
JOBS_BUSY = documented_error(
    f"{MAX_RUNNING} jobs are training, of any lab (`errors[0].type` `jobs_busy`, `ctx` {{running, retry_after}}); "
    "retry after the Retry-After header's seconds, or cancel one."
)
LATE_CLIENTS = (
    "A client that connects late gets every event from the start; with a `Last-Event-ID` header (EventSource "
    "sends it when it reconnects) it gets the events after that id, and 204 when the job has finished and there "
    "are none (which tells EventSource not to reconnect)."
)
RUNS_APART = (
    f"At most {MAX_RUNNING} jobs train at once on the server, of every lab and all its worker processes together: "
    "another is answered 429 with a Retry-After header (seconds, estimated from the running jobs' pace). A job "
    "trains on a thread of its own with one intra-op thread, never on the model worker, so attention requests "
    "keep being answered. Whichever worker process answers, a job's events and DELETE work the same. A job whose "
    f"estimated training work (model/analysis/work.py) is over {JOB_SHARE} times the server's ATTNSCOPE_WORK_BUDGET "
    "is refused before it starts: 422 `work_too_large`, `loc` the steps (Iris: epochs), ctx {gflop, budget_gflop, "
    "largest}: the most that fit at the job's other settings."
)


def add_job_routes(router: APIRouter, lab: Lab, train: str, name: str, events_doc: str) -> None:
    """GET {train}/{job}/events (the job's event stream, from the start) and DELETE {train}/{job} (cancel) for one
    lab on its router; `train` is the path of its POST under the router's prefix ("/induction/train"), `name` how
    the summaries call one of its jobs ("An induction-head training job")."""

    @router.get(
        f"{train}/{{job}}/events",
        response_class=EventSourceResponse,
        summary=f"{name}'s events, from the start",
        description=events_doc,
        responses={
            200: {"content": {"text/event-stream": {"schema": event_schema(("eval", "done", "cancelled", "error"))}},
                  "description": events_doc},
            204: {"description": "Last-Event-ID was the job's last event and the job has finished: nothing more."},
            404: UNKNOWN_JOB,
        },
        name=f"{lab.name}_events",
    )
    async def events(job: JobPath, jobs: Jobs, last_event_id: LastEventId = None) -> Response:  # type: ignore[assignment]
        return event_stream(jobs.get(lab, job, "path"), last_event_id)

    @router.delete(
        f"{train}/{{job}}",
        status_code=204,
        response_class=Response,
        summary=f"Cancel {name[0].lower()}{name[1:]}",
        description="The job stops before its next step and publishes `cancelled`; a finished job is left as it is. "
        "Either way 204.",
        responses={404: UNKNOWN_JOB},
        name=f"cancel_{lab.name}",
    )
    def cancel(job: JobPath, jobs: Jobs) -> Response:
        jobs.get(lab, job, "path").cancel()
        return Response(status_code=204)
