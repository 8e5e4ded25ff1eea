"""The networks: what a transformer computes, with no knowledge of files.

`config` (NetConfig: the numbers and choices a network is built from), `transformer` (the one network
every family is a configuration of: embeddings, blocks with their LayerNorms before or after each
sublayer, an optional final LayerNorm and tied LM head), `attention` (multi-head attention, one small
function per step of model/steps.py), `positions` (sinusoidal, RoPE, ALiBi and learned tables) and
`edit` (a what-if change to some heads, an input of the forward).
"""
