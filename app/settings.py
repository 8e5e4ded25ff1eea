"""Server settings, read from the environment with the prefix ATTNSCOPE_."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from model.checkpoints.registry import DEFAULT_MODEL

from .middleware import frame_ancestors_error, host_name

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES_DIR = ROOT / "templates"
STATIC_DIR = ROOT / "static"
LM_UPLOAD_BYTES = 8 * 1024 * 1024  # the default cap on a text to train on (model/lab/lm.py MAX_BYTES caps it again)


def default_lm_dir() -> Path:
    """Where the models trained on this server are kept unless ATTNSCOPE_LM_DIR names another directory: the
    user's data directory, $XDG_DATA_HOME/attnscope/lm (~/.local/share/attnscope/lm when XDG_DATA_HOME is unset)."""
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "attnscope" / "lm"


class Settings(BaseSettings):
    """Every field can be set as ATTNSCOPE_<NAME>, e.g. ATTNSCOPE_PORT=9000."""

    model_config = SettingsConfigDict(env_prefix="ATTNSCOPE_", frozen=True)

    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    default_model: str = DEFAULT_MODEL
    model_dirs: dict[str, Path] = Field(
        default_factory=dict,
        description='checkpoint directory per model id, as JSON: {"minilm": "/path/to/dir"}; '
        "default: the files inside the installed package",
    )
    model_paths: Annotated[list[Path], NoDecode] = Field(
        default_factory=list,
        description=f"local Hugging Face checkpoint directories, or repo ids (ORG/NAME) found in the local Hugging "
        f"Face cache (HF_HUB_CACHE, HF_HOME; never downloaded), to serve besides the packaged model, separated by "
        f"{os.pathsep!r} (attnscope serve --model PATH, repeatable); each is listed under its directory's name, or "
        "a repo id's NAME; a directory wins over a repo id of the same name",
    )
    show_model_paths: bool = Field(False, description="put each model's checkpoint directory in /api/v1/models")
    device: Literal["cpu", "cuda"] = Field("cpu", description="where the models run; cuda needs a CUDA build of torch")
    dtype: Literal["float32", "bfloat16"] = Field(
        "float32", description="what the weights are kept and computed in: float32 (answers equal transformers' to "
        "1e-5), or bfloat16 (half the memory, faster on a CPU with AVX-512 BF16 or AMX; maps a few hundredths from "
        "float32's at most)")
    workers: int = Field(1, ge=1, description="uvicorn worker processes (attnscope serve --workers N)")
    jobs_dir: Path | None = Field(
        None,
        description="a directory the worker processes of one server share for the Iris training jobs; "
        "attnscope serve --workers N makes a temporary one",
    )
    cors_origins: list[str] = Field(
        default_factory=list,
        description='origins allowed to call the API from a browser, as JSON: ["http://localhost:3000"]; '
        "empty (the default) turns CORS off",
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="more names the server answers in the Host header, besides 127.0.0.1, localhost, [::1] "
        'and the bound address, as JSON: ["attnscope.lan", "192.168.1.20"] (a port is ignored); any other '
        'Host gets 400. ["*"] answers every Host, which lets any web site read the API through DNS '
        "rebinding: unsafe",
    )
    frame_ancestors: str = Field(
        "'none'",
        description="who may show the pages in a frame (the CSP's frame-ancestors), separated by spaces: 'none' "
        "(the default: nobody), or 'self' and http(s) origins, e.g. \"'self' http://localhost:8888\" to show "
        "attnscope in a notebook's IFrame served from that origin",
    )
    corpus: Path | None = Field(
        None,
        description="a corpus index directory (written by attnscope corpus index FILE --model ID --out DIR) "
        "that /corpus and /api/v1/corpus query (attnscope serve --corpus DIR); none: those answer 409",
    )
    max_body_bytes: int = Field(2 * 1024 * 1024, ge=1024, description="largest accepted request body")
    max_json_values: int = Field(
        2_500_000,
        ge=1,
        description="largest number of attention weights in one JSON answer (layers x heads x N x N)",
    )
    cache_bytes: int = Field(
        64 * 1024 * 1024, ge=0, description="memory for recently computed attention maps (64 MiB holds one 512-token "
        "MiniLM answer as u16, or dozens of short ones; the server rests at about 550 MB with it); 0 turns the "
        "cache off"
    )
    torch_threads: int = Field(default_factory=lambda: os.cpu_count() or 1, ge=1)
    work_budget: float = Field(
        1300.0, gt=0, allow_inf_nan=False,
        description="the most model work one request may take, in GFLOP (model/analysis/work.py estimates each "
        "request's from the model's size, its tokens and its settings, before any model work); a request over it "
        "gets 422 work_too_large (patching: patch_too_large) naming the largest input that fits. 1300 is about "
        "12 s of the largest accepted request (integrated gradients) alone on a 2-core machine; scale it by a "
        "faster machine's speed (docs/settings.md)",
    )

    lm_dir: Path = Field(
        default_factory=default_lm_dir,
        description="where the models trained on the server from a learner's text (POST /api/v1/labs/lm/train) "
        "are kept, one checkpoint directory each; the server loads them at start-up, so they survive a restart. "
        "Default: the user's data directory, $XDG_DATA_HOME/attnscope/lm (~/.local/share/attnscope/lm)",
    )
    lm_uploads: bool = Field(
        True, description="accept texts to train a model on (POST /api/v1/labs/lm/train); false refuses every "
        "one with 403 (a shared deployment that should not train)")
    lm_max_upload_bytes: int = Field(
        LM_UPLOAD_BYTES, ge=1024, description="the largest text to train on, in bytes of UTF-8 (an upload or a "
        "pasted text); larger is refused with 413. At most model/lab/lm.py's own limit (8 MB), whichever is less")
    lm_keep: int = Field(
        8, ge=1, le=1000, description="how many trained models the server keeps: after a new one is saved, the "
        "oldest beyond this number are removed, from the model list and the disk")

    @field_validator("model_paths", mode="before")
    @classmethod
    def _split_paths(cls, value: Any) -> Any:
        if isinstance(value, str):  # from the environment: os.pathsep-separated
            return [part for part in value.split(os.pathsep) if part.strip()]
        return value

    @field_validator("frame_ancestors")
    @classmethod
    def _sources_are_sources(cls, sources: str) -> str:
        problem = frame_ancestors_error(sources.split())
        if problem is not None:
            raise ValueError(problem)
        return " ".join(sources.split())

    @field_validator("allowed_hosts")
    @classmethod
    def _hosts_are_hosts(cls, hosts: list[str]) -> list[str]:
        for host in hosts:
            if host != "*" and host_name(host) is None:
                raise ValueError(f"{host!r} is not a host name or address (e.g. \"attnscope.lan\", \"[fd00::5]\")")
        return hosts
