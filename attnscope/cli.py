"""Command line: `attnscope serve`, and the commands of attnscope/commands.py (models, attention, generate)."""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import uvicorn

from app.settings import Settings
from attnscope import commands
from model.checkpoints import DTYPES, SUPPORTED, check_device, check_dtype, hfcache, load
from model.corpus.query import Corpus, CorpusError
from model.errors import CheckpointError, DeviceError

KEEP_ALIVE_S = 75


def bind_warning(host: str) -> str | None:
    """A warning when the address exposes the server beyond this machine."""
    if host in ("0.0.0.0", "::", ""):
        return f"warning: binding {host or 'all interfaces'} exposes attnscope to every network this machine is on"
    return None


def add_serve(sub: argparse._SubParsersAction[argparse.ArgumentParser], settings: Settings) -> None:
    serve = sub.add_parser("serve", help="serve the explorer and the REST API")
    serve.add_argument("--host", default=settings.host, help=f"address to bind (default {settings.host})")
    serve.add_argument("--port", type=int, default=settings.port, help=f"port (default {settings.port})")
    serve.add_argument("--model", action="append", default=[], metavar="PATH|ORG/NAME",
                       help="a local Hugging Face checkpoint directory, or a repo id in the local Hugging Face "
                            "cache (HF_HUB_CACHE, HF_HOME; never downloaded), to serve too (repeatable; "
                            f"{', '.join(SUPPORTED)})")
    serve.add_argument("--device", choices=("cpu", "cuda"), default=settings.device,
                       help=f"where the models run (default {settings.device}); cuda needs a CUDA build of torch")
    serve.add_argument("--dtype", choices=tuple(DTYPES), default=settings.dtype,
                       help=f"what the weights are kept and computed in (default {settings.dtype}); bfloat16 takes "
                            "half the memory and is faster on a CPU with AVX-512 BF16 or AMX, its maps a few "
                            "hundredths from float32's at most")
    serve.add_argument("--workers", type=int, default=settings.workers,
                       help="worker processes, each with its own models and cache (default 1); "
                            "see docs/deploy.md")
    serve.add_argument("--corpus", type=Path, default=settings.corpus, metavar="DIR",
                       help="a corpus index (written by `attnscope corpus index FILE --model ID --out DIR`) that "
                            "/corpus and /api/v1/corpus query")


def model_path(value: str) -> Path:
    """--model's value as ATTNSCOPE_MODEL_PATHS holds it: a path made absolute (the workers may start
    elsewhere), a repo id (ORG/NAME, not an existing path) as it is."""
    return Path(value) if hfcache.is_repo_id(value) else Path(value).expanduser().resolve()


def serve(args: argparse.Namespace, settings: Settings) -> int:
    if args.workers < 1:
        print("attnscope: --workers must be 1 or more", file=sys.stderr)
        return 2
    # The server's settings are read from the environment, in every worker process.
    paths = [*settings.model_paths, *(model_path(value) for value in args.model)]
    try:  # a repo id missing from the cache is refused here, before anything starts
        for path in paths:
            if hfcache.is_repo_id(path):
                hfcache.snapshot(str(path))
    except CheckpointError as exc:
        print(f"attnscope cannot start: {exc}", file=sys.stderr)
        return 1
    if paths:
        os.environ["ATTNSCOPE_MODEL_PATHS"] = os.pathsep.join(str(p) for p in paths)
    if args.corpus is not None:  # a directory that is not an index is refused here, in one line
        corpus = args.corpus.expanduser().resolve()
        try:
            Corpus(corpus).close()
        except CorpusError as exc:
            print(f"attnscope cannot start: {exc}", file=sys.stderr)
            return 1
        os.environ["ATTNSCOPE_CORPUS"] = str(corpus)
    try:
        check_device(args.device)
        check_dtype(args.dtype, args.device)
    except DeviceError as exc:
        print(f"attnscope cannot start: {exc}", file=sys.stderr)
        return 1
    os.environ["ATTNSCOPE_DEVICE"] = args.device
    os.environ["ATTNSCOPE_DTYPE"] = args.dtype
    os.environ["ATTNSCOPE_HOST"] = args.host
    jobs_dir: str | None = None
    if args.workers > 1:
        # uvicorn starts a worker again whenever one exits: a worker that cannot start would never stop
        # restarting, so every checkpoint is checked here first.
        try:
            for path in paths:
                load(path)
        except CheckpointError as exc:
            print(f"attnscope cannot start: {exc}", file=sys.stderr)
            return 1
        if settings.jobs_dir is None:  # the workers share the Iris training jobs through it
            jobs_dir = tempfile.mkdtemp(prefix="attnscope-jobs-")
            os.environ["ATTNSCOPE_JOBS_DIR"] = jobs_dir
    warning = bind_warning(args.host)
    if warning:
        print(warning, file=sys.stderr)
    print(f"attnscope: serving on http://{args.host}:{args.port}", file=sys.stderr)
    try:
        # A new worker imports torch and loads every model before it answers the supervisor's health check:
        # uvicorn's 5 s default killed and restarted workers on a busy machine.
        # Idle keep-alive connections are kept 75 s, not uvicorn's 5: longer than the idle timeout of the proxies
        # and load balancers in front of a server (60 s is common), so the proxy closes them, never this server
        # just as a client sends on one (a client busy for over 5 s then got ReadError on its next request).
        uvicorn.run("app.main:create_app", factory=True, host=args.host, port=args.port, log_level="info",
                    workers=args.workers if args.workers > 1 else None, timeout_worker_healthcheck=60,
                    timeout_keep_alive=KEEP_ALIVE_S)
    finally:
        if jobs_dir is not None:
            shutil.rmtree(jobs_dir, ignore_errors=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    settings = Settings()
    parser = argparse.ArgumentParser(prog="attnscope", description="See what attention does inside a transformer.")
    sub = parser.add_subparsers(dest="command", required=True)
    add_serve(sub, settings)
    commands.add_parsers(sub)
    args = parser.parse_args(argv)
    if args.command == "serve":
        return serve(args, settings)
    try:
        return commands.run(args)
    except BrokenPipeError:  # the reader of the output left (`attnscope corpus heads ... | head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing more to flush into the closed pipe
        return 128 + signal.SIGPIPE  # what a Unix tool's shell reports when its reader leaves


if __name__ == "__main__":
    sys.exit(main())
