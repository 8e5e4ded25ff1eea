"""The `display` of byte-level BPE tokens (GPT-2, RoBERTa) against transformers' tokenizers and Python's UTF-8.

The rule (model/checkpoints/tokenizer.py): each token displays the characters of its segment's text whose first
UTF-8 byte it holds, its leading space included, so the displays joined are the text. The reference
here reads the bytes of each token from transformers' own byte alphabet and decodes with Python.
"""

import shutil
from pathlib import Path

import pytest
import transformers
from transformers.convert_slow_tokenizer import bytes_to_unicode

from model.checkpoints import load
from model.checkpoints.files import load_tokenizer
from tests.checkpoints import make_checkpoint

BYTE_LEVEL = ("gpt2", "roberta")
TEXTS = [
    "Hello world, attention is all you need.",
    "注意力机制让模型关注输入中最相关的部分。",  # in the training text: merged into long tokens
    "模型关注注意力",  # merges that end inside a character and start inside the next
    "我爱猫，你好吗？",  # characters the tiny vocabulary never saw: one byte a token
    "emoji 🙂👍🏽 and flags 🇨🇳",  # 4-byte characters and joined sequences
    "café naïve Ωmega",
    "  two  spaces\n\nnew\tlines ",
    "Where is the dog?注意",
]
UNICODE_TO_BYTE = {c: b for b, c in bytes_to_unicode().items()}


@pytest.fixture(scope="module", params=BYTE_LEVEL)
def checkpoint(request, checkpoint_dirs) -> tuple[str, Path]:
    return request.param, checkpoint_dirs[request.param]


@pytest.fixture(scope="module")
def pair(checkpoint):
    kind, directory = checkpoint
    return kind, load(directory).tokenizer, transformers.AutoTokenizer.from_pretrained(str(directory))


def reference_displays(theirs, text: str) -> tuple[list[int], list[str]]:
    """transformers' ids for the text (no special tokens), and for each token the characters whose first
    byte lies in its bytes; a space the tokenizer put before the text belongs to no token."""
    ids = theirs(text, add_special_tokens=False)["input_ids"]
    chunks = [bytes(UNICODE_TO_BYTE[c] for c in piece) for piece in theirs.convert_ids_to_tokens(ids)]
    stream = b"".join(chunks)
    inserted = len(stream) - len(text.encode("utf-8"))  # 1 with add_prefix_space, else 0
    assert stream[inserted:].decode("utf-8") == text
    first_bytes, at = [], inserted
    for char in text:
        first_bytes.append(at)
        at += len(char.encode("utf-8"))
    displays, begin = [], 0
    for chunk in chunks:
        end = begin + len(chunk)
        displays.append("".join(c for c, b in zip(text, first_bytes, strict=True) if begin <= b < end))
        begin = end
    return ids, displays


def text_tokens(encoded):
    return [t for t in encoded.tokens if not t.special]


@pytest.mark.parametrize("text", TEXTS)
def test_displays_follow_the_bytes(pair, text):
    kind, ours, theirs = pair
    ids, expected = reference_displays(theirs, text)
    real = text_tokens(ours.encode(text))
    assert [t.text for t in real] == theirs.convert_ids_to_tokens(ids)  # Token.text stays the tokenizer's
    assert [t.display for t in real] == expected
    assert "".join(t.display for t in real) == text  # every character once, in order
    assert not any(t.unknown for t in real)  # every byte is in a byte-level vocabulary
    assert all("\ufffd" not in t.display and set(t.display) <= set(text) for t in real)  # no mojibake


def test_split_characters_show_on_their_first_byte(pair):
    kind, ours, theirs = pair
    text = "我爱猫"  # not in the vocabulary: each character is three one-byte tokens
    real = text_tokens(ours.encode(text))
    assert [t.text for t in real] == theirs.tokenize(text) and len(real) == 9
    assert [t.display for t in real] == ["我", "", "", "爱", "", "", "猫", "", ""]
    assert [(t.start, t.end) for t in real] == [(0, 1)] * 3 + [(1, 2)] * 3 + [(2, 3)] * 3  # offsets: whole chars
    assert theirs.decode(theirs.convert_tokens_to_ids([real[0].text])) == "\ufffd"  # what decoding alone shows


def test_a_token_across_a_character_boundary(pair):
    """A merge that holds the end of one character and the start of the next shows only the next."""
    kind, ours, theirs = pair
    text = "模型关注注意力"
    crossing = 0
    for token in text_tokens(ours.encode(text)):
        raw = bytes(UNICODE_TO_BYTE[c] for c in token.text)
        if 0x80 <= raw[0] < 0xC0 and len(raw) > 1:  # starts inside a character
            crossing += 1
            assert token.display and token.display != text[token.start] and token.display[0] == text[token.start + 1]
    assert crossing >= 2


def test_leading_space_shows(pair):
    kind, ours, theirs = pair
    real = text_tokens(ours.encode("Hello world"))
    assert [(t.text, t.display) for t in real] == [("Hello", "Hello"), ("Ġworld", " world")]
    assert theirs.decode(theirs.convert_tokens_to_ids(["Ġworld"])) == " world"


def test_pair_segments_each_join_to_their_text(pair):
    kind, ours, theirs = pair
    text, second = "我爱 cats", "注意 dogs 🙂"
    enc = ours.encode(text, second)
    if kind == "gpt2":  # RoBERTa types every token 0
        for segment, source in enumerate((text, second)):
            assert "".join(t.display for t in enc.tokens if t.segment == segment) == source
    assert "".join(t.display for t in text_tokens(enc)) == text + second
    specials = [t for t in enc.tokens if t.special]
    assert all(t.display == t.text and not t.unknown for t in specials)


def test_typed_added_tokens_display_as_typed(pair):
    kind, ours, _ = pair
    typed = "<|endoftext|>" if kind == "gpt2" else "<mask>"
    text = f"a {typed} b"
    real = text_tokens(ours.encode(text))
    assert typed in [t.display for t in real] and "".join(t.display for t in real) == text


def test_vocabulary_files_give_the_same_displays(checkpoint, tmp_path):
    """Without tokenizer.json the loader builds the tokenizer from vocab.json + merges.txt: same displays."""
    kind, directory = checkpoint
    files = tmp_path / "files"
    shutil.copytree(directory, files)
    (files / "tokenizer.json").unlink()
    built, saved = load_tokenizer(files, kind, 512), load_tokenizer(directory, kind, 512)
    for text in TEXTS:
        assert [(t.text, t.display) for t in built.encode(text).tokens] == \
            [(t.text, t.display) for t in saved.encode(text).tokens]


@pytest.fixture(scope="module")
def prefixed(tmp_path_factory):
    """A RoBERTa tokenizer that puts a space before a text that does not start with one."""
    directory = tmp_path_factory.mktemp("roberta-prefix")
    tok = transformers.RobertaTokenizerFast.from_pretrained(str(make_checkpoint("roberta", directory)),
                                                             add_prefix_space=True)
    tok.save_pretrained(str(directory))  # tokenizer.json with the prefix space
    return load_tokenizer(directory, "roberta", 512), tok


@pytest.mark.parametrize("text", ["Hello world", "注意力", " leading space", "\ttab first"])
def test_an_inserted_prefix_space_is_shown_by_no_token(prefixed, text):
    ours, tok = prefixed
    ids, expected = reference_displays(tok, text)
    real = text_tokens(ours.encode(text))
    assert [t.text for t in real] == tok.convert_ids_to_tokens(ids)
    assert [t.display for t in real] == expected and "".join(expected) == text


def test_wordpiece_checkpoints_are_not_byte_level(tmp_path_factory):
    bert = load(make_checkpoint("bert", tmp_path_factory.mktemp("bert"))).tokenizer
    assert not bert.byte_level
    assert [t.display for t in bert.encode("the cat").tokens] == ["[CLS]", "the", "cat", "[SEP]"]


def test_bytes_missing_from_the_vocabulary_are_unknown_and_show_their_characters(tmp_path):
    """A byte-level vocabulary without some bytes gives the unknown token for them: it shows the source
    characters of its offsets (tokenizers' own), each character once."""
    from tokenizers import Tokenizer as RawTokenizer
    from tokenizers import models, pre_tokenizers

    from model.checkpoints.tokenizer import Tokenizer

    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    vocab = {piece: i for i, piece in enumerate(["<unk>", "Ġ", *letters])}
    raw = RawTokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.save(str(tmp_path / "tokenizer.json"))
    text = "cat 猫 dog"
    ours = Tokenizer(tmp_path / "tokenizer.json", max_tokens=64)
    tokens = ours.encode(text).tokens
    offsets = raw.encode(text).offsets
    assert [t.text for t in tokens] == ["c", "a", "t", "Ġ", "<unk>", "<unk>", "<unk>", "Ġ", "d", "o", "g"]
    assert [(t.start, t.end) for t in tokens] == offsets
    assert [t.display for t in tokens] == ["c", "a", "t", " ", "猫", "", "", " ", "d", "o", "g"]
    assert [t.unknown for t in tokens] == [False] * 4 + [True] * 3 + [False] * 4


def test_the_api_serves_the_displays(checkpoint, tmp_path):
    """POST /api/v1/attention on a served byte-level checkpoint: Chinese and emoji read as typed."""
    from fastapi.testclient import TestClient

    from app.main import create_app
    from app.settings import Settings

    kind, directory = checkpoint
    served = tmp_path / f"tiny-{kind}"
    shutil.copytree(directory, served)
    theirs = transformers.AutoTokenizer.from_pretrained(str(served))
    text, second = "我爱🙂 注意力 world", "猫 dog"
    with TestClient(create_app(Settings(allowed_hosts=["testserver"], model_paths=[served]))) as client:
        r = client.post("/api/v1/attention", json={"text": text, "model": f"tiny-{kind}", "layers": [0]})
        r2 = client.post("/api/v1/attention", json={"text": text, "text_pair": second, "model": f"tiny-{kind}",
                                                    "layers": [0]})
    assert r.status_code == 200, r.text
    tokens = [t for t in r.json()["tokens"] if not t["special"]]
    ids, expected = reference_displays(theirs, text)
    assert [t["text"] for t in tokens] == theirs.convert_ids_to_tokens(ids)
    assert [t["display"] for t in tokens] == expected and "".join(expected) == text
    assert not any(t["unknown"] for t in r.json()["tokens"])
    if kind == "gpt2":
        assert r2.status_code == 422  # GPT-2 takes one text
    else:
        real = [t for t in r2.json()["tokens"] if not t["special"]]
        assert "".join(t["display"] for t in real) == text + second
