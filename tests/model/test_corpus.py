"""The corpus index against recomputing it text by text: the top-k texts of a head equal sorting the metrics of
/api/v1/metrics' model function (model/analysis/heads.head_metrics) on each text run alone, the pairs equal the
largest entries of each text's own maps (numpy here), induction equals a loop written here; skipped lines are
counted; directories that are not an index, and queries out of range, are refused."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch

from model.analysis import heads
from model.corpus.index import IndexSettings, build
from model.corpus.query import Corpus, CorpusError
from model.errors import IndexOutOfRange

SUBJECTS = ["the cat", "a dog", "my sister", "the old man", "she", "he", "the teacher", "our neighbour", "a bird"]
VERBS = ["saw", "liked", "found", "painted", "followed", "ignored", "called", "visited", "fed", "heard"]
OBJECTS = ["the ball", "a red car", "the river", "his friend", "her book", "the garden", "a small house", "the moon"]
TAILS = ["yesterday.", "at night.", "in the park.", "again and again.", "with care.", "before lunch, twice.", "."]
EMPTY_LINE, LONG_LINE = 5, 17
TOL = 2e-5


def sentences(count: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    pick = lambda words: words[rng.integers(len(words))]  # noqa: E731
    return [f"{pick(SUBJECTS).capitalize()} {pick(VERBS)} {pick(OBJECTS)} {pick(TAILS)}" for _ in range(count)]


def corpus_lines() -> list[str]:
    lines = sentences(60)
    lines[EMPTY_LINE] = "   "
    lines[LONG_LINE] = "word " * 600  # 602 tokens with [CLS] and [SEP]: over MiniLM's 512
    return lines


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """These forwards are small: one thread each keeps two test workers on two cores from spinning on each other's
    OpenMP threads (ten times slower here)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def index(tmp_path_factory, minilm):
    root = tmp_path_factory.mktemp("corpus")
    path = root / "corpus.txt"
    path.write_text("\n".join(corpus_lines()) + "\n", encoding="utf-8")
    report = build(path, "minilm", root / "idx", IndexSettings(batch_size=8, shard_size=16), model=minilm)
    return report, Corpus(root / "idx")


@pytest.fixture(scope="module")
def reference(minilm):
    """text_id -> (metrics name -> (L, H) numpy, maps (L, H, T, T) numpy, readable tokens, ids, special flags),
    each text run alone."""
    out = {}
    for text_id, text in enumerate(corpus_lines()):
        if text_id in (EMPTY_LINE, LONG_LINE):
            continue
        encoded = minilm.tokenizer.encode(text)
        per_layer = minilm.attention_maps(encoded).per_layer
        # what /api/v1/metrics answers (model/analysis/study.head_metrics runs the same two calls)
        metrics = {k: v.numpy() for k, v in heads.head_metrics(per_layer, heads.token_kinds(encoded.tokens)).items()}
        maps = np.stack([m.numpy() for m in per_layer])
        out[text_id] = (metrics, maps, [t.display for t in encoded.tokens], encoded.ids,
                        [t.special for t in encoded.tokens])
    return out


def induction(maps: np.ndarray, ids: list[int], special: list[bool]) -> np.ndarray | None:
    """Mean of a[i, j + 1] over queries i whose token occurred before (last at j); None with no repeat."""
    picked = []
    for i in range(len(ids)):
        earlier = [j for j in range(i) if ids[j] == ids[i] and not special[j]]
        if not special[i] and earlier:
            picked.append(maps[:, :, i, earlier[-1] + 1])
    return np.mean(picked, axis=0) if picked else None


def reference_values(reference, metric: str, layer: int, head: int) -> dict[int, float]:
    values = {}
    for text_id, (metrics, maps, _, ids, special) in reference.items():
        if metric == "induction":
            found = induction(maps, ids, special)
            if found is not None:
                values[text_id] = float(found[layer, head])
        else:
            values[text_id] = float(metrics[metric][layer, head])
    return values


def agrees(found, values: dict[int, float], k: int, lowest: bool) -> bool:
    """The index's top k agree with sorting `values`: the same k values in order, each text's own value."""
    expected = sorted(values.values(), reverse=not lowest)[:k]
    return (len(found) == len(expected) and np.allclose([t.value for t in found], expected, atol=TOL)
            and all(abs(values[t.text_id] - t.value) <= TOL for t in found))


@pytest.mark.parametrize(("metric", "layer", "head", "lowest"), [
    ("to_previous", 3, 7, False), ("entropy", 0, 0, True), ("to_sep", 5, 11, False), ("distance", 2, 4, False),
    ("to_punctuation", 1, 9, False), ("to_first", 4, 2, True), ("induction", 3, 5, False),
])
def test_top_equals_the_metrics_of_each_text(index, reference, metric, layer, head, lowest):
    _, corpus = index
    found = corpus.top(layer, head, metric, k=10, lowest=lowest)
    assert agrees(found, reference_values(reference, metric, layer, head), 10, lowest)
    # control: another head's numbers do not pass
    assert not agrees(found, reference_values(reference, metric, (layer + 1) % 6, head), 10, lowest)


def test_induction_is_null_without_a_repeated_token(index, reference):
    _, corpus = index
    repeats = {i for i, (_, maps, _, ids, special) in reference.items() if induction(maps, ids, special) is not None}
    assert 0 < len(repeats) < len(reference)
    found = corpus.top(0, 0, "induction", k=100)
    assert {t.text_id for t in found} == repeats


def largest_pairs(maps: np.ndarray, special: list[bool], k: int) -> list[tuple[int, int, float]]:
    """A (T, T) map's k heaviest entries between two text tokens, off the diagonal."""
    entries = [(float(maps[q, key]), q, key) for q in range(len(special)) for key in range(len(special))
               if q != key and not special[q] and not special[key]]
    return [(q, key, w) for w, q, key in sorted(entries, key=lambda e: -e[0])[:k]]


def test_pairs_are_the_largest_entries_of_each_map(index, reference):
    _, corpus = index
    for layer, head in ((0, 3), (3, 7), (5, 1)):
        for text in corpus.top(layer, head, "to_next", k=8):
            _, maps, tokens, _, special = reference[text.text_id]
            expected = largest_pairs(maps[layer, head], special, 5)
            assert [p.weight for p in text.pairs] == pytest.approx([w for _, _, w in expected], abs=TOL)
            for pair in text.pairs:
                assert pair.weight == pytest.approx(float(maps[layer, head, pair.query, pair.key]), abs=TOL)
                assert (pair.query_token, pair.key_token) == (tokens[pair.query], tokens[pair.key])
                assert pair.query != pair.key and not special[pair.query] and not special[pair.key]
            # control: the map's heaviest entries overall include [CLS]/[SEP] or the diagonal
            overall = np.sort(maps[layer, head].ravel())[::-1][:5]
            assert not np.allclose(overall, [p.weight for p in text.pairs], atol=TOL)


def test_pattern_finds_the_heaviest_matching_pair(index, reference):
    _, corpus = index
    layer, head, query, key = 2, 6, r"^(he|she|my|his|her)$", r"^[a-z]+$"
    best = {}
    for text_id, (_, maps, tokens, _, special) in reference.items():
        weights = [w for q, k, w in largest_pairs(maps[layer, head], special, 5)
                   if re.search(query, tokens[q]) and re.search(key, tokens[k])]
        if weights:
            best[text_id] = max(weights)
    found = corpus.pattern(layer, head, query, key, k=10)
    assert [t.value for t in found] == pytest.approx(sorted(best.values(), reverse=True)[:10], abs=TOL)
    for text in found:
        assert text.value == pytest.approx(best[text.text_id], abs=TOL)
        assert all(re.search(query, p.query_token) and re.search(key, p.key_token) for p in text.pairs)


def test_heads_are_the_corpus_means(index, reference):
    _, corpus = index
    points = corpus.heads("entropy", "to_previous")
    assert [(p.layer, p.head) for p in points] == [(layer, head) for layer in range(6) for head in range(12)]
    entropy = np.mean([m["entropy"] for m, *_ in reference.values()], axis=0)
    previous = np.mean([m["to_previous"] for m, *_ in reference.values()], axis=0)
    assert np.allclose([p.x for p in points], entropy.ravel(), atol=TOL)
    assert np.allclose([p.y for p in points], previous.ravel(), atol=TOL)


def test_skipped_lines_are_counted_never_truncated(index):
    report, corpus = index
    assert report.skipped == {"too_long": 1, "empty": 1, "bad_line": 0}
    assert (corpus.texts, corpus.skipped) == (58, 2)
    manifest = json.loads((corpus.directory / "manifest.json").read_text())
    assert manifest["skipped"] == report.skipped and manifest["complete"] and len(manifest["shards"]) == 4
    ids = {t.text_id for t in corpus.top(0, 0, "entropy", k=100)}
    assert ids == set(range(60)) - {EMPTY_LINE, LONG_LINE}


def test_jsonl_reads_the_text_field_and_counts_bad_lines(tmp_path, minilm):
    lines = [json.dumps({"text": "The cat sat.", "source": "a"}), "{not json", json.dumps({"title": "no text"}),
             json.dumps({"text": ""}), json.dumps({"text": "A dog ran.", "id": 7})]
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(lines) + "\r\n", encoding="utf-8-sig")  # a byte-order mark, a Windows line end
    report = build(path, "minilm", tmp_path / "idx", IndexSettings(shard_size=2), model=minilm)
    assert report.skipped == {"too_long": 0, "empty": 1, "bad_line": 2}
    found = Corpus(tmp_path / "idx").top(0, 0, "entropy", k=10)
    assert sorted((t.text_id, t.text) for t in found) == [(0, "The cat sat."), (4, "A dog ran.")]


def test_a_directory_without_an_index_is_refused(tmp_path):
    with pytest.raises(CorpusError) as caught:
        Corpus(tmp_path)
    assert caught.value.type == "not_an_index" and "\n" not in caught.value.message
    (tmp_path / "manifest.json").write_text('{"format": "something else"}')
    with pytest.raises(CorpusError, match="not a corpus index"):
        Corpus(tmp_path)


def test_queries_out_of_range_or_unknown_are_refused(index):
    _, corpus = index
    with pytest.raises(IndexOutOfRange, match=r"layers \[6\] out of range; this model has layers 0..5"):
        corpus.top(6, 0, "entropy")
    with pytest.raises(IndexOutOfRange, match=r"heads \[12\]"):
        corpus.pattern(0, 12, "a", "b")
    with pytest.raises(CorpusError, match="use one of: entropy, distance") as caught:
        corpus.top(0, 0, "loudness")
    assert caught.value.type == "unknown_metric" and caught.value.loc == ("by",)
    with pytest.raises(CorpusError) as caught:
        corpus.heads("entropy", "nope")
    assert caught.value.loc == ("y",)
    with pytest.raises(CorpusError) as caught:
        corpus.pattern(0, 0, "(", "a")
    assert caught.value.type == "bad_pattern"


def test_an_index_of_another_corpus_or_a_busy_directory_is_refused(index, tmp_path, minilm):
    _, corpus = index
    other = tmp_path / "other.txt"
    other.write_text("A different corpus.\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="holds the index of another corpus") as caught:
        build(other, "minilm", corpus.directory, IndexSettings(batch_size=8, shard_size=16), model=minilm)
    assert caught.value.type == "index_mismatch"
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(CorpusError, match="not empty and holds no corpus index"):
        build(other, "minilm", tmp_path / "busy", model=minilm)
