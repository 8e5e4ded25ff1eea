import pytest

from model.tokenizer import TooManyTokens


def test_offsets_are_code_points_into_each_segment(minilm):
    text = "héllo 🙂 wörld"
    enc = minilm.tokenizer.encode(text)
    real = [t for t in enc.tokens if not t.special]
    assert [text[t.start : t.end] for t in real][0] == "héllo"
    emoji = [t for t in real if text[t.start : t.end] == "🙂"]
    assert len(emoji) == 1 and emoji[0].end - emoji[0].start == 1  # one code point, two UTF-16 units


def test_special_flags_and_typed_sep(minilm):
    text = "a [SEP] b"
    enc = minilm.tokenizer.encode(text)
    assert [t.text for t in enc.tokens] == ["[CLS]", "a", "[SEP]", "b", "[SEP]"]
    assert [t.special for t in enc.tokens] == [True, False, False, False, True]
    typed = enc.tokens[2]
    assert (typed.start, typed.end) == (2, 7) and text[typed.start : typed.end] == "[SEP]"
    assert enc.tokens[0].start is None and enc.tokens[-1].end is None


def test_pair_segments_and_offsets(minilm):
    enc = minilm.tokenizer.encode("the cat", "a dog sat")
    assert [t.text for t in enc.tokens] == ["[CLS]", "the", "cat", "[SEP]", "a", "dog", "sat", "[SEP]"]
    assert enc.segments == [0, 0, 0, 0, 1, 1, 1, 1]
    assert [t.segment for t in enc.tokens] == enc.segments
    dog = enc.tokens[5]
    assert "a dog sat"[dog.start : dog.end] == "dog"


def test_too_many_tokens_is_an_error_not_a_truncation(minilm):
    with pytest.raises(TooManyTokens) as err:
        minilm.tokenizer.encode(" ".join(["word"] * 600))
    assert err.value.count == 602 and err.value.limit == 512
    assert "602" in str(err.value) and "512" in str(err.value)


def test_no_padding_to_128(minilm):
    assert len(minilm.tokenizer.encode("short")) == 3
