import pytest

from model.checkpoints.tokenizer import TooManyTokens


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


CHINESE = "注意力机制让模型学会聚焦于最相关的部分。"


def test_unknown_tokens_display_their_source_characters(minilm):
    enc = minilm.tokenizer.encode(CHINESE)
    real = [t for t in enc.tokens if not t.special]
    unknown = [t for t in real if t.text == "[UNK]"]
    assert len(unknown) >= 10  # the packaged vocabulary lacks most of these characters
    for t in unknown:
        assert t.unknown and t.display == CHINESE[t.start : t.end]
    for t in real:
        if t.text != "[UNK]":  # characters the vocabulary has: known, shown as the token
            assert not t.unknown and t.display == t.text == CHINESE[t.start : t.end]
    assert "".join(t.display for t in real) == CHINESE  # every character covered, in order


def test_english_displays_equal_the_token_text(minilm):
    enc = minilm.tokenizer.encode("Attention lets every token look at every other tokenization.", "Second part.")
    assert any(t.text.startswith("##") for t in enc.tokens)  # continuation pieces are known too
    for t in enc.tokens:
        assert t.display == t.text and not t.unknown


def test_normalised_equal_is_known_and_displays_the_token(minilm):
    """The tokenizer lowercases and strips accents: "Café" is the known token "cafe"."""
    (cafe,) = [t for t in minilm.tokenizer.encode("Café").tokens if not t.special]
    assert (cafe.text, cafe.display, cafe.unknown) == ("cafe", "cafe", False)


def test_special_and_typed_tokens(minilm):
    enc = minilm.tokenizer.encode("a [SEP] 🙂", "注")
    by_text = {t.text: t for t in enc.tokens}
    assert all(t.display == t.text and not t.unknown for t in enc.tokens if t.special)
    typed = [t for t in enc.tokens if t.text == "[SEP]" and not t.special]
    assert typed and typed[0].display == "[SEP]" and not typed[0].unknown  # typed as written
    emoji = [t for t in enc.tokens if t.text == "[UNK]" and t.segment == 0]
    assert emoji and emoji[0].display == "🙂" and emoji[0].unknown
    pair = [t for t in enc.tokens if t.segment == 1 and not t.special]
    assert [t.display for t in pair] == ["注"]  # offsets into text_pair
    assert by_text["[CLS]"].display == "[CLS]"


def test_a_token_not_from_its_characters_is_unknown(minilm):
    tok = minilm.tokenizer
    assert tok.known_as_written("##ing", "ing") and tok.known_as_written("hello", "HÉLLO")
    assert not tok.known_as_written("[UNK]", "注") and not tok.known_as_written("cat", "dog")
