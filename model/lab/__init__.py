"""The course's worked examples, in float64 and with every number inspectable: the toy attention layer
and its variants (`toy`, `variants`), the backward pass written out (`backward`, pure; `toy_backward`,
the toy's gradients checked against torch.autograd), the dense layers and optimizers written out
(`layers`), the Iris transformer trained with them (`iris`), and the cost of attention (`cost`).
"""
