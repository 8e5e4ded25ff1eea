"""Faults: bad checkpoints and settings refuse to start; clients that leave; SIGTERM."""

import json
import shutil
import signal
import socket
import threading
import time
from collections.abc import Callable

import httpx
import pytest

from bench.common import Server
from model.checkpoints.registry import minilm_dir

WORDS = "the city river school music light house water story world night field".split()


def long_text(seed: int, n_tokens: int = 510) -> str:
    return " ".join(WORDS[(seed * 7 + i * 5) % len(WORDS)] for i in range(n_tokens - 2)) + f" {seed}"


def refuses_to_start(tmp_path, **env) -> str:
    server = Server(**env)
    code = server.spawn().wait(60)
    assert code != 0
    return server.output()


def broken_checkpoint(tmp_path, change) -> str:
    d = tmp_path / "minilm"
    shutil.copytree(minilm_dir(), d, ignore=shutil.ignore_patterns("1_Pooling", "*.md"))
    change(d)
    return json.dumps({"minilm": str(d)})


def test_corrupt_weights_name_the_file(tmp_path):
    dirs = broken_checkpoint(tmp_path, lambda d: (d / "model.safetensors").write_bytes(b"\x00" * 100))
    out = refuses_to_start(tmp_path, ATTNSCOPE_MODEL_DIRS=dirs)
    assert f"attnscope cannot start: {tmp_path / 'minilm' / 'model.safetensors'}: cannot read weights" in out


def test_truncated_weights_name_the_file(tmp_path):
    def truncate(d):
        data = (d / "model.safetensors").read_bytes()
        (d / "model.safetensors").write_bytes(data[: len(data) // 2])

    out = refuses_to_start(tmp_path, ATTNSCOPE_MODEL_DIRS=broken_checkpoint(tmp_path, truncate))
    assert "attnscope cannot start" in out and "model.safetensors" in out


def test_missing_file_is_named(tmp_path):
    dirs = broken_checkpoint(tmp_path, lambda d: (d / "config.json").unlink())
    out = refuses_to_start(tmp_path, ATTNSCOPE_MODEL_DIRS=dirs)
    assert f"attnscope cannot start: {tmp_path / 'minilm' / 'config.json'}: missing file" in out


def test_unknown_default_model_names_the_setting(tmp_path):
    out = refuses_to_start(tmp_path, ATTNSCOPE_DEFAULT_MODEL="gpt-9")
    assert "ATTNSCOPE_DEFAULT_MODEL='gpt-9' is not a known model; known: minilm" in out


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with Server() as s:
        yield s


def send_and_leave(base: str, body: dict, path: str = "/api/v1/attention?encoding=u16",
                   stay: Callable[[], object] = lambda: None) -> None:
    """Send a whole request, call `stay`, then close the connection without reading the answer."""
    port = int(base.rsplit(":", 1)[1])
    payload = json.dumps(body).encode()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n".encode()
            + f"Content-Length: {len(payload)}\r\n\r\n".encode() + payload
        )
        stay()


def lane(client: httpx.Client, name: str = "interactive") -> dict:
    return client.get("/healthz").json()["jobs"][name]


def wait_for(client: httpx.Client, ready: Callable[[dict], bool], name: str = "interactive") -> None:
    """Until the lane's report satisfies `ready` (30 s at most)."""
    deadline = time.monotonic() + 30
    while not ready(lane(client, name)):
        assert time.monotonic() < deadline, f"the {name} lane never got there: {lane(client, name)}"
        time.sleep(0.01)


def busy_then_leave(client: httpx.Client, base: str, seed: int, leavers: int = 6, busy: int = 4) -> None:
    """`busy` long inputs keep the interactive lane busy; meanwhile each leaver sends its request, waits until its
    job is queued behind them, and leaves. Every leaver's job is then waiting when its client leaves."""
    threads = [threading.Thread(target=client.post, args=("/api/v1/attention?encoding=u16",),
                                kwargs={"json": {"text": long_text(1000 + seed * busy + i)}}) for i in range(busy)]
    for thread in threads:
        thread.start()
    wait_for(client, lambda now: now["running"] == 1 and now["waiting"] >= 2)  # at least two forwards to go

    def submitted(now: dict) -> int:  # grows by one per job queued, whatever starts or ends meanwhile
        return now["waiting"] + now["running"] + now["done"]

    for i in range(leavers):
        before = submitted(lane(client))
        send_and_leave(base, {"text": long_text(seed * 10 + i)},
                       stay=lambda before=before: wait_for(client, lambda now: submitted(now) > before))
    for thread in threads:
        thread.join()


def idle_jobs(client: httpx.Client) -> dict:
    deadline = time.monotonic() + 30
    while (jobs := client.get("/healthz").json()["jobs"])["queued"] and time.monotonic() < deadline:
        time.sleep(0.1)
    return jobs


def settled_rss_mb(server, bound: float, wait_s: float = 5.0) -> float:
    """The server's RSS once it is at most `bound`, or after `wait_s`: free heap pages go back to the OS
    on a timer once the model worker is idle (app/hub.py Housekeeper), not on a request's path."""
    deadline = time.monotonic() + wait_s
    while (rss := server.rss_mb()) > bound and time.monotonic() < deadline:
        time.sleep(0.1)
    return rss


def test_queued_work_of_clients_that_left_is_dropped(server):
    client = httpx.Client(base_url=server.base, timeout=60)
    for seed in range(3):  # warm-up: the cache fills with 510-token answers (37 MB each), allocations settle
        busy_then_leave(client, server.base, seed)
    before = idle_jobs(client)["dropped"]
    rss_warm = settled_rss_mb(server, 0, wait_s=1.0)
    for seed in range(3, 6):
        busy_then_leave(client, server.base, seed)
    jobs = idle_jobs(client)
    assert jobs["queued"] == 0
    assert jobs["dropped"] - before == 18  # every job whose client left while it waited: none computed for nobody
    r = client.post("/api/v1/attention", json={"text": "still answering", "layers": [0], "heads": [0]})
    assert r.status_code == 200
    assert settled_rss_mb(server, rss_warm * 1.1) <= rss_warm * 1.1  # flat: nothing kept for the clients that left
    assert "Traceback" not in server.output()


def test_a_running_grid_lets_views_through_and_stops_when_its_client_leaves(server):
    # MiniLM's residual grid at 128 tokens, the largest one request may ask: 768 patched runs, about 16 CPU s
    client = httpx.Client(base_url=server.base, timeout=60)
    before = idle_jobs(client)["dropped"]
    body = {"clean": " ".join(["cat"] * 126), "corrupted": " ".join(["cat"] * 125 + ["dog"]), "target": "residual"}
    seen = {}

    def meanwhile() -> None:
        """While the grid runs on the background lane, a view's forward of a text never sent before is answered,
        and the grid is still running when it is: the view did not wait for the whole analysis."""
        wait_for(client, lambda now: now["running"] == 1, "background")
        seen["answer"] = client.post("/api/v1/attention", json={"text": "A fresh sentence while a grid runs.",
                                                                "layers": [0], "heads": [0]})
        seen["grid"] = lane(client, "background")
        seen["slices"] = seen["grid"]["slices"]

    send_and_leave(server.base, body, "/api/v1/patch", stay=meanwhile)
    assert seen["answer"].status_code == 200
    assert seen["grid"]["running"] == 1 and seen["grid"]["done"] == 0, seen["grid"]
    jobs = idle_jobs(client)
    assert jobs["queued"] == 0 and jobs["dropped"] == before + 1  # stopped, not finished for nobody
    assert jobs["background"]["slices"] > seen["slices"]  # it asked between slices, and stopped at one
    r = client.post("/api/v1/patch", json={**body, "clean": "The cat sat.", "corrupted": "The dog sat."})
    assert r.status_code == 200
    assert "Traceback" not in server.output()


def test_sigterm_finishes_in_flight_requests_and_exits_cleanly(tmp_path):
    server = Server()
    server.start()
    results = []

    def call(i):
        with httpx.Client(base_url=server.base, timeout=60) as c:
            results.append(c.post("/api/v1/attention?encoding=u16", json={"text": long_text(500 + i)}).status_code)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    # SIGTERM once the server has read all three: each is queued for the model worker or answered
    # (a fixed sleep raced with a busy machine, where the third had not even connected yet)
    with httpx.Client(base_url=server.base, timeout=10) as probe:
        deadline = time.monotonic() + 60
        while len(results) + probe.get("/healthz").json()["jobs"]["queued"] < 3:
            assert time.monotonic() < deadline, "the three requests never reached the server"
            time.sleep(0.01)
    server.proc.send_signal(signal.SIGTERM)
    for t in threads:
        t.join()
    assert results == [200, 200, 200]
    # uvicorn shuts down gracefully, then re-raises the signal so the exit status reports it
    assert server.proc.wait(30) in (0, -signal.SIGTERM)
    out = server.output()
    assert "Application shutdown complete" in out and "Finished server process" in out
    assert "Traceback" not in out
