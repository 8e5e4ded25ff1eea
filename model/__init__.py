"""attnscope's model layer: pure torch and numpy, no web code.

Shape letters used in the comments throughout this package:

    B   batch size
    T   number of query tokens (and of key tokens in self-attention)
    S   number of key/value tokens when it differs from T (cross-attention)
    D   model width (d_model)
    H   number of attention heads
    Dh  width of one head (D // H)
"""
