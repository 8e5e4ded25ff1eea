import pytest

from model.pretrained import PretrainedEncoder, minilm_dir


@pytest.fixture(scope="session")
def minilm() -> PretrainedEncoder:
    return PretrainedEncoder.from_dir(minilm_dir())
