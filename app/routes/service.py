"""The service's own routes: health, the offline API docs and the vendored assets."""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path

import plotly
from fastapi import APIRouter, Request, Response
from fastapi.responses import FileResponse, HTMLResponse

from ..deps import Hub
from ..schemas.service import Health, Jobs
from ..settings import STATIC_DIR
from ..templates import templates

PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"

VERSION = importlib.metadata.version("attnscope")

router = APIRouter()


@router.get(
    "/healthz",
    response_model=Health,
    tags=["service"],
    summary="200 once the default model is loaded",
    description="The `Attnscope-Worker` header gives the process id of the worker process that answered "
    "(attnscope serve --workers N runs N of them). `jobs` reports the model's queue: its two lanes (interactive, "
    "background), what waits and runs on each, and the slices of long work done.",
)
def healthz(hub: Hub, response: Response) -> Health:
    response.headers["Attnscope-Worker"] = str(os.getpid())
    return Health(status="ok", version=VERSION, jobs=Jobs(**hub.stats, **hub.lanes(), gave_way=hub.views_first.waits))


@router.get("/docs", response_class=HTMLResponse, include_in_schema=False)
def docs(request: Request) -> HTMLResponse:
    """Swagger UI from this server's own copy, its init code in a static script: no CDN, no inline script."""
    return templates.TemplateResponse(request, "docs.html")


@router.get("/static/vendor/plotly.min.js", include_in_schema=False)
def plotly_js() -> FileResponse:
    return FileResponse(PLOTLY_JS, media_type="text/javascript", headers={"Cache-Control": "public, max-age=86400"})


@router.get("/favicon.ico", include_in_schema=False)
def favicon() -> FileResponse:
    return FileResponse(STATIC_DIR / "favicon.ico", media_type="image/x-icon")
