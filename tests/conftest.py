import os

# Tests never reach a model hub: the reference model is read from the same packaged files.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
