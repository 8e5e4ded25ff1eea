"""Checkpoints by Hugging Face repo id ("ORG/NAME" or "ORG/NAME@REVISION"), found in the local cache only.

The cache is where the Hugging Face libraries keep it: HF_HUB_CACHE, else HUGGINGFACE_HUB_CACHE, else
HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub, read from the environment
at each look-up (huggingface_hub reads it once, when first imported). huggingface_hub's snapshot_download
with local_files_only=True finds the snapshot: refs/<revision> (refs/main by default) names the commit,
snapshots/<commit>/ holds the files; a commit hash as revision is looked up directly. With
local_files_only=True it makes no request, whatever HF_HUB_OFFLINE says: a repo id is never downloaded.

A value that names an existing directory is that directory, even when it is shaped like ORG/NAME.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from model.errors import CheckpointError

# ORG/NAME with an optional @REVISION (a branch, a tag or a commit hash); huggingface_hub checks the rest.
REPO_ID = re.compile(r"(?P<repo>[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*)(?:@(?P<revision>[\w.-]+))?")


def cache_dir() -> Path:
    """The hub cache directory the Hugging Face libraries use, from the environment as it is now."""
    env = os.environ
    home = env.get("HF_HOME") or os.path.join(env.get("XDG_CACHE_HOME") or os.path.join("~", ".cache"),
                                              "huggingface")
    hub = env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE") or os.path.join(home, "hub")
    return Path(os.path.expandvars(os.path.expanduser(hub)))


def is_repo_id(value: str | Path) -> bool:
    """Shaped like ORG/NAME[@REVISION] and not an existing path (a directory of that name wins)."""
    text = str(value)
    return REPO_ID.fullmatch(text) is not None and not Path(text).expanduser().exists()


def repo_name(value: str) -> str:
    """NAME of ORG/NAME[@REVISION]: what a cached model's id is made from."""
    match = REPO_ID.fullmatch(value)
    if match is None:
        raise ValueError(f"{value!r} is not a repo id (ORG/NAME)")
    return match["repo"].split("/")[1]


def snapshot(value: str) -> Path:
    """The snapshot directory of the repo id `value` in the local cache.

    Raises CheckpointError in one line, naming the cache directory looked in and the command that downloads
    the repo, when it is not there."""
    match = REPO_ID.fullmatch(value)
    if match is None:
        raise CheckpointError(f"{value!r} is not a Hugging Face repo id (ORG/NAME or ORG/NAME@REVISION)")
    repo, revision = match["repo"], match["revision"]
    from huggingface_hub import snapshot_download  # only for a repo id: importing it takes a while
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    where = cache_dir()
    try:
        found = snapshot_download(repo, revision=revision, cache_dir=where, local_files_only=True)
    except HFValidationError as exc:
        raise CheckpointError(f"{value!r} is not a Hugging Face repo id: {exc}") from None
    except LocalEntryNotFoundError:
        command = f"hf download {repo}" + (f" --revision {revision}" if revision else "")
        if (where / f"models--{repo.replace('/', '--')}").is_dir():
            problem = f"the Hugging Face cache at {where} holds {repo} but no complete snapshot of {revision or 'main'}"
        else:
            problem = f"no such directory, and not in the Hugging Face cache at {where}"
        raise CheckpointError(
            f"{value}: {problem} (HF_HUB_CACHE, HF_HOME); attnscope never downloads: "
            f"run `{command}` to download it"
        ) from None
    return Path(found)
