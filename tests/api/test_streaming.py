"""Maps leave the model worker layer by layer (app/hub.py attention_layers), quantized inside the forward.

The real model runs on the hub's real worker thread; the only addition is a gate in the model's
per-layer callback, so the tests can hold the forward between two layers and see what has arrived.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from app.errors import AnalysesBusy
from app.hub import LONG_WORK_FLOPS, MAX_BACKGROUND_WAITING, ModelHub
from model.analysis import work
from model.checkpoints.loaded import LoadedModel
from model.errors import Stopped
from model.nets.config import NetConfig

TEXT = " ".join(f"word{i % 17} line{i % 5}" for i in range(100))  # 400 tokens


class HeldAfterLayer0(LoadedModel):
    """The packaged model, whose forward waits after layer 0 until the test releases it."""

    def __init__(self, model: LoadedModel) -> None:
        super().__init__(model.net, model.tokenizer, model.spec)
        self.layer0_sent = threading.Event()
        self.release = threading.Event()

    def attention_maps(self, encoded, compact=False, on_layer=None, edit=None):
        def gate(layer, block):
            if layer == 0:
                self.layer0_sent.set()  # before handing it over: whoever receives layer 0 sees this set
            on_layer(layer, block)
            if layer == 0:
                assert self.release.wait(60), "the test never released the forward"

        return super().attention_maps(encoded, compact, gate if on_layer else None, edit)


def run(coroutine):
    """asyncio.run on a thread of its own (Playwright's sync API may keep a loop running on this one)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


@pytest.fixture(scope="module")
def hub():
    h = ModelHub("minilm", cache_bytes=256 << 20, torch_threads=2)
    yield h
    h.close()


@pytest.fixture
def held(hub):
    plain = hub.loaded["minilm"]
    model = hub.loaded["minilm"] = HeldAfterLayer0(plain)
    yield model
    model.release.set()
    hub.loaded["minilm"] = plain


def test_compact_maps_are_the_float_weights_rounded_to_uint16(hub):
    encoded = hub.loaded["minilm"].tokenizer.encode(TEXT)
    floats = hub.attention("minilm", encoded, TEXT, None)
    compact = hub.attention("minilm", encoded, TEXT, None, compact=True)
    for f, c in zip(floats.per_layer, compact.per_layer, strict=True):
        weights, values = f.numpy().astype(np.float64), c.numpy()
        assert values.dtype == np.uint16
        assert np.abs(values / 65535 - weights).max() <= 7.7e-6  # the documented bound (1/131070 + float32 rounding)
        exact = np.rint(weights * 65535)  # float64; the server rounds w * 65535 in float32 (ties may differ)
        assert np.abs(values - exact).max() <= 1 and np.mean(values == exact) > 0.999
    assert compact.nbytes * 2 == floats.nbytes


def test_layer_0_arrives_while_the_forward_is_still_running(hub, held):
    encoded = held.tokenizer.encode(TEXT + " streamed")

    async def consume():
        layers = hub.attention_layers("minilm", encoded, TEXT + " streamed", None, [0, 5, 2], compact=True)
        first = await anext(layers)
        running = held.layer0_sent.is_set() and not held.release.is_set()
        held.release.set()
        return first, running, [block async for block in layers]

    first, running, rest = run(consume())
    assert running  # layer 0 was in the client's hands while the forward was held before layer 1
    whole = hub.attention("minilm", encoded, TEXT + " streamed", None, compact=True)  # now from the cache
    for block, layer in zip([first, *rest], [0, 5, 2], strict=True):
        assert block.equal(whole.per_layer[layer])


def test_a_client_that_leaves_stops_the_forward_at_its_next_layer(hub, held):
    text = TEXT + " left early"
    encoded = held.tokenizer.encode(text)
    dropped = hub.stats["dropped"]

    async def leave_after_layer_0():
        layers = hub.attention_layers("minilm", encoded, text, None, list(range(6)), compact=True)
        await anext(layers)
        await layers.aclose()  # what a cancelled answer's stream does
        held.release.set()

    run(leave_after_layer_0())
    for _ in range(600):
        if hub.stats["queued"] == 0:
            break
        threading.Event().wait(0.05)
    assert hub.stats == {"queued": 0, "dropped": dropped + 1}
    assert hub.cache.get(("minilm", text, None, True, None)) is None  # nothing half-made was cached


def test_long_analyses_wait_in_their_own_lane_and_one_too_many_is_told_when_to_retry(hub):
    """The background lane: a view's forward runs while an analysis holds that lane; MAX_BACKGROUND_WAITING may
    wait behind it, the next is refused at once (AnalysesBusy, a retry time) instead of queued."""
    release = threading.Event()

    def analysis(stop):  # holds the background lane until released, asking between its slices
        while not release.wait(0.01):
            if stop():
                raise Stopped()
        return "done"

    with ThreadPoolExecutor(max_workers=MAX_BACKGROUND_WAITING + 1) as pool:
        running = [pool.submit(hub.run, analysis, stoppable=True, background=True)]
        while hub.lanes()["background"].running == 0:
            threading.Event().wait(0.01)
        # a view's forward on the interactive lane answers while the analysis runs
        maps = hub.attention("minilm", hub.loaded["minilm"].tokenizer.encode("a view meanwhile"), "a view meanwhile",
                             None)
        assert maps.per_layer[0].shape[-1] == 5 and hub.lanes()["background"].running == 1
        running += [pool.submit(hub.run, analysis, stoppable=True, background=True)
                    for _ in range(MAX_BACKGROUND_WAITING)]
        while hub.lanes()["background"].waiting < MAX_BACKGROUND_WAITING:
            threading.Event().wait(0.01)
        with pytest.raises(AnalysesBusy) as refused:
            hub.run(analysis, stoppable=True, background=True)
        assert refused.value.waiting == MAX_BACKGROUND_WAITING and refused.value.retry_after >= 1
        release.set()
        assert [job.result() for job in running] == ["done"] * (MAX_BACKGROUND_WAITING + 1)
    lane = hub.lanes()["background"]
    assert (lane.waiting, lane.running) == (0, 0) and lane.done >= MAX_BACKGROUND_WAITING + 1 and lane.slices > 0


def test_work_estimated_long_runs_on_the_background_lane(hub):
    """hub.run with an estimate over LONG_WORK_FLOPS takes the background lane (a view's forward never waits behind
    it), under it the interactive one; the comment's figures are the estimates of model/analysis/work.py."""
    here = lambda: threading.current_thread().name  # noqa: E731
    assert hub.run(here, flops=LONG_WORK_FLOPS / 2).startswith("attnscope-model")
    assert hub.run(here, flops=LONG_WORK_FLOPS * 2).startswith("attnscope-background")
    assert hub.run(here).startswith("attnscope-model")
    minilm = hub.loaded["minilm"].cfg
    assert work.forward(minilm, 512) < LONG_WORK_FLOPS / 2  # every MiniLM view at its limit stays interactive
    gpt2 = NetConfig(vocab_size=50257, d_model=768, n_heads=12, n_layers=12, d_ff=3072, max_positions=1024,
                     norm_place="pre", causal=True, tied_head=True)
    assert work.lens(gpt2, 1024) > LONG_WORK_FLOPS  # GPT-2's lens at its limit goes to the background lane
