"""The small GPT grown from a text (model/lab/lm.py): its checkpoint against transformers' GPT-2 on the same files,
its character tokens, reproducibility, the text's refusals and entropies, and that training lowers the loss."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import transformers

import attnscope
from bench.lm import i18n_text, string_values
from model.errors import InputError
from model.lab.lm import MAX_BYTES, MIN_CHARS, LmSettings, LmTraining, check_text, training_logits
from model.lab.lm_data import entropies
from model.lab.lm_save import trained_record

TOLERANCE = 1e-5
SENTENCE = "注意力机制让模型学会聚焦重要的信息。"
TINY = {"context": 32, "layers": 2, "heads": 2, "d_model": 32, "batch": 8, "eval_every": 10, "sample_chars": 20}


@pytest.fixture(scope="module")
def texts() -> dict[str, str]:
    """The project's own prose (bench/lm.py): 20 KB of English and of Chinese."""
    return {language: i18n_text(language, 20_000) for language in ("en", "zh")}


@pytest.fixture(scope="module")
def trained(texts, tmp_path_factory):
    """A model trained briefly on English and Chinese together (the sentence included), saved."""
    training = LmTraining(texts["en"] + texts["zh"] + SENTENCE + "\n", LmSettings(steps=20, seed=3, **TINY))
    training.run(lambda e: None)
    return training, training.save(tmp_path_factory.mktemp("lm") / "tiny-lm", "tiny-lm")


def test_the_i18n_parser_reads_values_with_escapes():
    source = 'export default {\n  // a comment\n  "a.b": "say \\"hi\\"\\n{name}",\n  "c": "注意\\u529b",\n};\n'
    assert string_values(source) == ['say "hi"\n{name}', "注意力"]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_checkpoint_gives_transformers_logits_and_maps(trained, texts, language):
    training, directory = trained
    text = texts[language][-TINY["context"]:]  # as many characters as the model takes
    model = attnscope.load(directory)
    ours = model.run(text, keep=())
    reference = transformers.GPT2LMHeadModel.from_pretrained(str(directory), attn_implementation="eager").eval()
    with torch.no_grad():
        answer = reference(torch.tensor([ours.ids]), output_attentions=True)
    theirs = answer.logits[0].numpy()  # (T, V)
    assert ours.ids == [training.vocabulary.index(c) for c in text]  # one id per character
    assert ours.logits is not None and ours.logits.shape == theirs.shape == (len(text), len(training.vocabulary))
    assert np.abs(ours.logits - theirs).max() <= TOLERANCE
    maps = torch.stack([a[0] for a in answer.attentions]).numpy()  # (L, H, T, T)
    assert np.abs(model.attention(text).maps - maps).max() <= TOLERANCE
    assert np.abs(theirs).max() > 0.5  # trained, not the near-zero logits of the initialisation


def test_each_character_is_one_token_shown_as_itself(trained):
    _, directory = trained
    tokens = attnscope.load(directory).encode(SENTENCE).tokens
    assert [t.display for t in tokens] == list(SENTENCE)
    assert [t.text for t in tokens] == list(SENTENCE) and not any(t.unknown or t.special for t in tokens)
    assert [(t.start, t.end) for t in tokens] == [(i, i + 1) for i in range(len(SENTENCE))]
    unseen = attnscope.load(directory).encode("注🦜\n")  # 🦜 is in no training text: the unknown token
    assert [(t.display, t.unknown) for t in unseen.tokens] == [("注", False), ("🦜", True), ("\n", False)]


def test_config_json_records_the_run(trained, checkpoint_dirs):
    training, directory = trained
    config = transformers.AutoConfig.from_pretrained(str(directory))
    assert (config.model_type, config.n_layer, config.n_head, config.n_embd, config.n_positions) == (
        "gpt2", 2, 2, 32, 32)
    extra = config.attnscope
    assert trained_record(directory) == extra and trained_record(checkpoint_dirs["gpt2"]) is None
    assert extra["trained"] is True and extra["settings"]["seed"] == 3 and len(extra["text_sha256"]) == 64
    assert extra["final_val_loss"] == training.last.val_loss and extra["characters"] == training.characters


def test_the_same_text_seed_and_settings_give_the_same_weights(texts):
    def weights(seed: int) -> dict[str, torch.Tensor]:
        training = LmTraining(texts["en"], LmSettings(steps=4, seed=seed, **TINY))
        training.run(lambda e: None)
        return training.net.state_dict()

    first, again, other = weights(1), weights(1), weights(2)
    assert all(torch.equal(first[k], again[k]) for k in first)
    assert not all(torch.equal(first[k], other[k]) for k in first)  # the seed matters


def test_a_few_dozen_steps_lower_the_loss(texts):
    seen = []
    training = LmTraining(texts["en"], LmSettings(steps=40, seed=0, lr=1e-2, **TINY))
    last = training.run(seen.append)
    assert [e.step for e in seen] == [0, 10, 20, 30, 40] and seen[-1] == last
    assert seen[0].train_loss == pytest.approx(math.log(len(training.vocabulary)), abs=0.1)  # untrained: uniform
    assert last.train_loss < seen[0].train_loss - 1.0 and last.val_loss < seen[0].val_loss - 1.0
    assert len(last.sample) == TINY["sample_chars"] and "[UNK]" not in last.sample


def test_the_training_forward_is_the_network_forward(texts):
    training = LmTraining(texts["zh"], LmSettings(steps=1, **TINY))
    ids = training.val_windows[:2, :-1]
    with torch.no_grad():
        trained_way = training_logits(training.net.eval(), ids)  # (2, T, V)
        own_way = training.net.logits(training.net(ids))  # (2, T, V)
    assert torch.allclose(trained_way, own_way, atol=1e-6)


def test_a_stop_ends_the_run_with_an_evaluation(texts):
    training = LmTraining(texts["en"], LmSettings(steps=50, **TINY))
    last = training.run(lambda e: None, stop=lambda: training.step >= 3)
    assert last.step == training.step == 3


@pytest.mark.parametrize(("text", "says"), [
    ("a" * (MIN_CHARS - 1), f"send at least {MIN_CHARS:,}"),
    ("ab\x00" * MIN_CHARS, "character 2 is a control character (U+0000)"),
    ("x" * MIN_CHARS + "\x07", "a control character (U+0007)"),
    ("x" * MIN_CHARS + "\x85", "(U+0085)"),
    ("x" * MIN_CHARS + "\ud800", "a lone surrogate (U+D800)"),
    ("注" * (MAX_BYTES // 3 + 1), f"send at most {MAX_BYTES:,}"),
])
def test_texts_it_cannot_train_on_are_refused(text, says):
    with pytest.raises(InputError) as caught:
        check_text(text)
    assert caught.value.loc == ("text",) and says in caught.value.message


def test_plain_text_with_tabs_and_line_breaks_is_taken():
    check_text("a\tb\r\nc 注意 🙂\n" * (MIN_CHARS // 10))


@pytest.mark.parametrize(("field", "value"), [("steps", 0), ("heads", 3), ("lr", 0.0), ("lr", math.nan),
                                               ("context", 4), ("seed", -1), ("batch", True)])
def test_settings_out_of_range_name_the_field(field, value):
    with pytest.raises(ValueError, match="d_model 32 is not divisible" if field == "heads" else f"^{field} is"):
        LmSettings(**{**TINY, field: value})


@pytest.mark.parametrize("text", ["abracadabra, abracadabra!\n" * 40, "注意力机制让模型学会聚焦。注意力！" * 30])
def test_the_entropies_equal_a_numpy_computation(text):
    codes = np.array([ord(c) for c in text])
    _, counts = np.unique(codes, return_counts=True)
    p = counts / counts.sum()
    unigram = -(p * np.log(p)).sum()
    pairs, pair_counts = np.unique(np.stack([codes[:-1], codes[1:]], axis=1), axis=0, return_counts=True)
    firsts = {c: n for c, n in zip(*np.unique(codes[:-1], return_counts=True), strict=True)}
    joint = pair_counts / pair_counts.sum()
    conditional = pair_counts / np.array([firsts[a] for a in pairs[:, 0]])  # p(b | a)
    bigram = -(joint * np.log(conditional)).sum()  # H(X_t | X_{t-1})
    assert entropies(text) == pytest.approx((unigram, bigram), abs=1e-9)
    assert 0 < bigram < unigram
