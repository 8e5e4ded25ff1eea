"""The ordered names of the steps of multi-head attention.

Trace keys, API keys, front-end labels and tests all use these names.
"""

STEPS: tuple[str, ...] = (
    "input",  # hidden state entering the attention layer
    "project",  # Q, K, V = X W + b at full width
    "split",  # each of Q, K, V cut into H heads of width Dh
    "scores",  # Q_h K_h^T, before scaling
    "scale",  # scores times the scale factor (1/sqrt(Dh))
    "mask",  # after the additive mask (-inf where a key is hidden)
    "softmax",  # rows are distributions over keys
    "weighted_sum",  # softmax @ V_h
    "concat",  # heads side by side again, width D
    "output",  # concat W_o + b_o, before the residual add
)
