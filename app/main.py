"""create_app(): the FastAPI application with its models, routes and pages."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import torch
from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.staticfiles import StaticFiles

from . import errors
from .hub import ModelHub, StartupError
from .jobs import JobRegistry
from .jobs.threads import light_thread
from .memory import keep_startup_objects, return_large_buffers_to_the_os
from .middleware import AllowedHosts, SecurityHeaders
from .routes import analysis, api, attribution, corpus, generate, iris, lab, labs, pages, patching, service, toy
from .routes.glimpse import router as glimpse_router
from .routes.informer import router as informer_router
from .routes.lm import TRAIN_PATH as LM_TRAIN_PATH
from .routes.lm import router as lm_router
from .routes.sequence import router as sequence_router
from .settings import STATIC_DIR, Settings
from .uploads import ENVELOPE_BYTES, UploadLimit, upload_cap


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        torch.set_num_threads(settings.torch_threads)  # the default of the model worker's thread
        light_thread()  # this thread's own: the event loop's torch ops stay out of the worker's way
        return_large_buffers_to_the_os()
        try:
            app.state.corpus = corpus.open_corpus(settings.corpus)  # None without one; a non-index is refused
            app.state.hub = ModelHub(settings.default_model, settings.cache_bytes, settings.torch_threads,
                                     settings.model_dirs, settings.model_paths, settings.device, settings.dtype,
                                     trained_dir=settings.lm_dir)
        except (StartupError, corpus.CorpusError) as exc:
            print(f"attnscope cannot start: {exc}", file=sys.stderr, flush=True)
            raise
        app.state.jobs = JobRegistry(settings.jobs_dir, give_way=app.state.hub.views_first.give_way)
        keep_startup_objects()
        yield
        app.state.jobs.close()  # running trainings stop before their next batch
        app.state.hub.close()
        if app.state.corpus is not None:
            app.state.corpus.close()

    app = FastAPI(
        title="attnscope",
        version="1",
        summary="Attention maps and step-by-step traces of a transformer running on this machine.",
        lifespan=lifespan,
        docs_url=None,  # served by routes/service.py from local assets: no CDN
        redoc_url=None,
    )
    app.state.settings = settings
    errors.install(app)
    app.add_exception_handler(corpus.NoCorpus, corpus.no_corpus)
    app.include_router(api.router)
    app.include_router(toy.router)
    app.include_router(analysis.router)
    app.include_router(attribution.router)
    app.include_router(patching.router)
    app.include_router(generate.router)
    app.include_router(lab.router)
    app.include_router(sequence_router)
    app.include_router(iris.router)
    app.include_router(labs.router)
    app.include_router(lm_router)
    app.include_router(informer_router)
    app.include_router(glimpse_router)
    app.include_router(corpus.router)
    app.include_router(service.router)  # before the /static mount: it serves /static/vendor/plotly.min.js
    app.include_router(pages.router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    if settings.cors_origins:  # off unless an explicit allow-list is configured
        app.add_middleware(CORSMiddleware, allow_origins=settings.cors_origins, allow_methods=["GET", "POST"],
                           allow_headers=["content-type"], allow_credentials=False)
    app.add_middleware(SecurityHeaders, frame_ancestors=settings.frame_ancestors)
    # the one path that takes a text to train on gets room for a text at the upload cap, JSON-escaped
    app.add_middleware(UploadLimit, limit=settings.max_body_bytes, path=LM_TRAIN_PATH,
                       path_limit=2 * upload_cap(settings) + ENVELOPE_BYTES)
    app.add_middleware(AllowedHosts, bound=settings.host, extra=settings.allowed_hosts)  # outermost: first
    return app
