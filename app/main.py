"""create_app(): the FastAPI application with its models, routes and pages."""

from __future__ import annotations

import sys
from contextlib import asynccontextmanager
from pathlib import Path

import plotly
import torch
from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from . import errors
from .hub import ModelHub, StartupError
from .memory import return_large_buffers_to_the_os
from .middleware import BodyLimit, SecurityHeaders
from .routes import api, pages
from .schemas import Health, Jobs
from .settings import STATIC_DIR, TEMPLATES_DIR, Settings

PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        torch.set_num_threads(settings.torch_threads)
        return_large_buffers_to_the_os()
        try:
            app.state.hub = ModelHub(settings.default_model, settings.cache_bytes, settings.torch_threads,
                                     settings.model_dirs)
        except StartupError as exc:
            print(f"attnscope cannot start: {exc}", file=sys.stderr, flush=True)
            raise
        yield
        app.state.hub.close()

    app = FastAPI(
        title="attnscope",
        version="1",
        summary="Attention maps and step-by-step traces of a transformer running on this machine.",
        lifespan=lifespan,
        docs_url=None,  # served below from local assets: no CDN
        redoc_url=None,
    )
    app.state.settings = settings
    errors.install(app)
    app.include_router(api.router)
    app.include_router(pages.router)
    templates = Jinja2Templates(directory=TEMPLATES_DIR)

    @app.get("/healthz", response_model=Health, tags=["service"], summary="200 once the default model is loaded")
    def healthz(request: Request) -> Health:
        return Health(status="ok", jobs=Jobs(**request.app.state.hub.stats))

    @app.get("/docs", response_class=HTMLResponse, include_in_schema=False)
    def docs(request: Request) -> HTMLResponse:
        return templates.TemplateResponse(request, "docs.html")

    @app.get("/static/vendor/plotly.min.js", include_in_schema=False)
    def plotly_js() -> FileResponse:
        return FileResponse(PLOTLY_JS, media_type="text/javascript", headers={"Cache-Control": "public, max-age=86400"})

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> FileResponse:
        return FileResponse(STATIC_DIR / "favicon.ico", media_type="image/x-icon")

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    if settings.cors_origins:  # off unless an explicit allow-list is configured
        app.add_middleware(CORSMiddleware, allow_origins=settings.cors_origins, allow_methods=["GET", "POST"],
                           allow_headers=["content-type"], allow_credentials=False)
    app.add_middleware(SecurityHeaders)
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)
    return app
