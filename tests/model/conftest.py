import pytest

from model.checkpoints import LoadedModel, load
from model.checkpoints.registry import minilm_dir


@pytest.fixture(scope="session")
def minilm() -> LoadedModel:
    return load("minilm")


# The test GPT-2 (tests/checkpoints.py) in our network, and transformers' own models on the same files: the
# references of the patching and attribution tests.
@pytest.fixture(scope="module")
def gpt2(checkpoint_dirs) -> LoadedModel:
    return load(checkpoint_dirs["gpt2"])


@pytest.fixture(scope="module")
def bert_reference():
    import transformers
    return transformers.BertModel.from_pretrained(str(minilm_dir()), attn_implementation="eager",
                                                  add_pooling_layer=False).eval()


@pytest.fixture(scope="module")
def gpt2_reference(checkpoint_dirs):
    import transformers
    return transformers.GPT2LMHeadModel.from_pretrained(str(checkpoint_dirs["gpt2"]),
                                                        attn_implementation="eager").eval()
