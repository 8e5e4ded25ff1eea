"""The small layers of the Iris transformer, each a forward and a backward written out, and two optimizers.

Dense layers act as X W + b with W stored in x out (the notes' convention). Every backward takes the
forward's inputs and the gradient of the loss with respect to the forward's output (`upstream`) and
returns the gradients with respect to its inputs and parameters. The attention layer's backward lives
in model/lab/backward.py. All of it is float64 torch without autograd.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch


def dense(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """x W + b for x (B, in), W (in, out), b (out)."""
    return x @ weight + bias  # (B, out)


def dense_backward(x: torch.Tensor, weight: torch.Tensor,
                   upstream: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dL/dx, dL/dW, dL/db) of y = x W + b, from upstream = dL/dy (B, out)."""
    d_x = upstream @ weight.T  # (B, in)
    d_weight = x.T @ upstream  # (in, out): each example's outer product x_b^T dy_b, summed
    d_bias = upstream.sum(dim=0)  # (out,)
    return d_x, d_weight, d_bias


def relu(x: torch.Tensor) -> torch.Tensor:
    """max(x, 0), element by element."""
    return x.clamp_min(0.0)


def relu_backward(x: torch.Tensor, upstream: torch.Tensor) -> torch.Tensor:
    """dL/dx of relu(x): upstream where x > 0, else 0 (at exactly 0 as well, as torch does)."""
    return upstream * (x > 0)


def mean_tokens(x: torch.Tensor) -> torch.Tensor:
    """The mean over the token axis: (B, T, D) -> (B, D) (the notes' GlobalAvgPool)."""
    return x.mean(dim=1)  # (B, D)


def mean_tokens_backward(upstream: torch.Tensor, tokens: int) -> torch.Tensor:
    """dL/dx of the mean over `tokens` tokens: each token gets upstream / T."""
    return (upstream / tokens).unsqueeze(1).expand(-1, tokens, -1)  # (B, T, D)


def softmax_cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The mean over the batch of -log softmax(logits)[label], and the softmax probabilities.

    logits (B, C), labels (B,) class indices. The log-softmax subtracts each row's maximum first, so
    large logits do not overflow.
    """
    shifted = logits - logits.max(dim=1, keepdim=True).values  # (B, C)
    log_probs = shifted - shifted.exp().sum(dim=1, keepdim=True).log()  # (B, C)
    loss = -log_probs.gather(1, labels[:, None]).mean()  # scalar
    return loss, log_probs.exp()


def softmax_cross_entropy_backward(probabilities: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """dL/dlogits of the mean cross-entropy: (softmax - one_hot(label)) / B."""
    one_hot = torch.zeros_like(probabilities)
    one_hot[torch.arange(labels.shape[0]), labels] = 1.0  # (B, C)
    return (probabilities - one_hot) / labels.shape[0]  # (B, C)


Parameters = dict[str, torch.Tensor]


@dataclass
class SGD:
    """Plain gradient descent: p <- p - lr * g."""

    lr: float

    def step(self, parameters: Parameters, gradients: Parameters) -> None:
        for name, p in parameters.items():
            p.sub_(self.lr * gradients[name])


@dataclass
class Adam:
    """Adam (Kingma & Ba 2015) with bias correction, step t = 1, 2, ...:

    m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2;  p <- p - lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
    """

    lr: float
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    t: int = 0
    m: Parameters = field(default_factory=dict)
    v: Parameters = field(default_factory=dict)

    def step(self, parameters: Parameters, gradients: Parameters) -> None:
        self.t += 1
        first = 1.0 - self.beta1**self.t  # bias corrections
        second = math.sqrt(1.0 - self.beta2**self.t)
        for name, p in parameters.items():
            g = gradients[name]
            if name not in self.m:
                self.m[name], self.v[name] = torch.zeros_like(p), torch.zeros_like(p)
            m, v = self.m[name], self.v[name]
            m.lerp_(g, 1.0 - self.beta1)  # b1 m + (1 - b1) g
            v.mul_(self.beta2).addcmul_(g, g, value=1.0 - self.beta2)  # b2 v + (1 - b2) g^2
            p.addcdiv_(m, v.sqrt().div_(second).add_(self.eps), value=-self.lr / first)

Optimizer = SGD | Adam
OPTIMIZERS = ("sgd", "adam")


def optimizer(name: str, lr: float) -> Optimizer:
    """An optimizer by its name ("sgd" or "adam")."""
    if name == "sgd":
        return SGD(lr)
    if name == "adam":
        return Adam(lr)
    raise ValueError(f"unknown optimizer {name!r}; use one of {', '.join(OPTIMIZERS)}")
