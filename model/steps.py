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

# The rest of the block around the attention, each (T, width) per token. A block records those its network
# has, in its order: post-norm (BERT) add_1 norm_1 mlp… add_2 norm_2; pre-norm (GPT-2, the Llama family)
# norm_1 (the attention's input) [post_norm_1] add_1 norm_2 mlp… [post_norm_2] add_2 [final_norm].
BLOCK_STEPS: tuple[str, ...] = (
    "block_input",  # the residual stream entering the block
    "norm_1",  # post: norm(add_1); pre: norm(block_input), what the attention reads
    "post_norm_1",  # sandwich norms (Gemma 2): norm(attention output), before the residual sum
    "add_1",  # post: block_input + attention output; pre: block_input + (post_norm_1 or the attention output)
    "norm_2",  # post: norm(add_2), the block's output; pre: norm(add_1), what the MLP reads
    "mlp_gate",  # gated MLP: x W_gate (+ b)
    "mlp_gate_act",  # gated MLP: act(mlp_gate)
    "mlp_hidden",  # x W_in (+ b): D -> d_ff (the gated MLP's "up" projection)
    "mlp_act",  # act(mlp_hidden), or gated: mlp_gate_act * mlp_hidden
    "mlp_out",  # mlp_act W_out (+ b): d_ff -> D
    "post_norm_2",  # sandwich norms: norm(mlp_out)
    "add_2",  # post: norm_1 + mlp_out; pre: add_1 + (post_norm_2 or mlp_out), the block's output
    "final_norm",  # pre-norm, the last block only: the network's final norm of add_2
)
