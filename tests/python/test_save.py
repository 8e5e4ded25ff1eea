"""attnscope.save and result.save: results written as .npz and .parquet and read back with plain numpy and pyarrow
(never with attnscope), every array and the meta compared with the results themselves."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

import attnscope

TEXT = "The cat sat on the mat."


@pytest.fixture(scope="module")
def results(minilm, gpt2) -> list:
    return [
        minilm.attention(TEXT, layers=[1, 0], heads=[3]),
        minilm.metrics(TEXT),
        gpt2.lens(TEXT, top_k=3),
        gpt2.edit_effect(TEXT, {"layer": 0, "heads": [1], "kind": "probsparse", "factor": 1}),
        gpt2.logit_attribution(TEXT, [5, 7]),
        minilm.detect(),
    ]


def test_npz_holds_every_array_and_the_meta(results, tmp_path):
    path = attnscope.save(results, tmp_path / "all.npz")
    with np.load(path) as z:
        header = json.loads(z["meta.json"].tobytes().decode("utf-8"))
        assert (header["format"], header["version"], len(header["results"])) == ("attnscope", 1, len(results))
        names = set(z.files)
        for i, result in enumerate(results):
            meta = header["results"][i]
            assert meta["model"] == result.model and meta["arrays"] == list(result._arrays())
            for name, array in result._arrays().items():
                assert f"{i}/{name}" in names
                assert z[f"{i}/{name}"].dtype == array.dtype and np.array_equal(z[f"{i}/{name}"], array)
        assert len(names) == 1 + sum(len(r._arrays()) for r in results)
    kinds = [m["kind"] for m in header["results"]]
    assert kinds == ["attention", "metrics", "lens", "edit_effect", "logit_attribution", "detect"]
    first = header["results"][0]
    assert (first["text"], first["layers"], first["heads"]) == (TEXT, [1, 0], [3])
    assert first["tokens"] == [t.display for t in results[0].tokens]
    assert header["results"][2]["rows"] == ["embeddings", "0", "1"]
    assert header["results"][3]["edit"]["kind"] == "probsparse"


def test_parquet_is_one_row_per_result(results, tmp_path):
    path = attnscope.save(results, tmp_path / "all.parquet")
    table = pq.read_table(path)
    assert table.num_rows == len(results)
    rows = table.to_pylist()
    for row, result in zip(rows, results, strict=True):
        assert json.loads(row["meta.json"])["kind"] == row["meta.kind"] == result._meta()["kind"]
        assert row["meta.model"] == result.model
        for name, array in result._arrays().items():
            back = np.asarray(row[name], dtype=array.dtype).reshape(row[f"{name}.shape"])
            assert np.array_equal(back, array), name
    assert rows[0]["maps.shape"] == [2, 1, len(results[0].ids), len(results[0].ids)]
    assert rows[0]["meta.tokens"] == [t.display for t in results[0].tokens] and rows[0]["meta.layers"] == [1, 0]
    assert rows[1]["maps"] is None and rows[0]["entropy"] is None  # arrays a result has not: null
    assert table.schema.field("maps").type.value_type == "float"  # float32 kept
    assert json.loads(rows[3]["meta.edit"])["factor"] == 1  # a dict: JSON text


def test_a_result_saves_itself(tmp_path, minilm):
    answer = minilm.rollout(TEXT, residual=0.25)
    with np.load(answer.save(tmp_path / "one.npz")) as z:
        assert np.array_equal(z["0/maps"], answer.maps)
        assert json.loads(z["meta.json"].tobytes())["results"][0]["residual"] == 0.25
    row = pq.read_table(answer.save(tmp_path / "one.parquet")).to_pylist()[0]
    assert np.array_equal(np.asarray(row["maps"], dtype=np.float32).reshape(row["maps.shape"]), answer.maps)


def test_refusals(tmp_path, minilm):
    with pytest.raises(ValueError, match=r"name the file \*.npz \(numpy\) or \*.parquet"):
        attnscope.save(minilm.mean("A cat."), tmp_path / "maps.csv")
    with pytest.raises(TypeError, match=r"results\[0\] is a dict, not an attnscope result"):
        attnscope.save([{"maps": 1}], tmp_path / "x.npz")
