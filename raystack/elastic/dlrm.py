"""DLRM pieces: the dense network (bottom MLP, pairwise dot interaction, top MLP), embedding
table initialisation, and sparse Adagrad. Embedding rows live on parameter servers; a worker
gathers the rows a batch needs, runs :func:`forward_backward`, and pushes row gradients."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn


@dataclass(frozen=True)
class DLRMSpec:
    n_dense: int = 13
    n_tables: int = 26
    vocab: int = 1000
    dim: int = 16
    bottom: tuple[int, ...] = (64,)
    top: tuple[int, ...] = (64,)


def _mlp(sizes: list[int], last_act: bool) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        layers.append(nn.Linear(a, b))
        if last_act or i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class DLRMDense(nn.Module):
    """Everything of DLRM except the embedding tables."""

    def __init__(self, spec: DLRMSpec, seed: int = 0) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.spec = spec
        self.bottom = _mlp([spec.n_dense, *spec.bottom, spec.dim], last_act=True)
        f = spec.n_tables + 1
        self.pairs = torch.triu_indices(f, f, offset=1)
        self.top = _mlp([spec.dim + f * (f - 1) // 2, *spec.top, 1], last_act=False)

    def forward(self, dense: torch.Tensor, emb: torch.Tensor) -> torch.Tensor:
        """``dense`` [B, n_dense], ``emb`` [B, n_tables, dim] -> logits [B]."""
        x = self.bottom(dense)
        feats = torch.cat([x[:, None, :], emb], dim=1)
        inter = torch.bmm(feats, feats.transpose(1, 2))[:, self.pairs[0], self.pairs[1]]
        return self.top(torch.cat([x, inter], dim=1)).squeeze(1)


def init_table(spec: DLRMSpec, table: int, seed: int = 0) -> np.ndarray:
    """Deterministic initial weights of one embedding table (same on any PS that hosts it)."""
    rng = np.random.default_rng(seed * 1000 + table)
    return rng.normal(0, 1.0 / np.sqrt(spec.dim), size=(spec.vocab, spec.dim)).astype(np.float32)


def adagrad_rows(weights: np.ndarray, accum: np.ndarray, ids: np.ndarray, grads: np.ndarray,
                 lr: float, eps: float = 1e-8) -> np.ndarray:
    """Sparse Adagrad in place on the rows ``ids`` (unique) of ``weights``; returns the step
    subtracted from those rows (what :func:`undo_adagrad_rows` needs)."""
    accum[ids] += grads * grads
    step = lr * grads / (np.sqrt(accum[ids]) + eps)
    weights[ids] -= step
    return step


def undo_adagrad_rows(weights: np.ndarray, accum: np.ndarray, ids: np.ndarray, grads: np.ndarray,
                      step: np.ndarray) -> None:
    """Take back one :func:`adagrad_rows` update (``step`` is what it returned). Updates applied
    since stay: both the weights and the accumulator are sums of their updates."""
    weights[ids] += step
    accum[ids] -= grads * grads


def forward_backward(model: DLRMDense, dense: np.ndarray, cat: np.ndarray, label: np.ndarray,
                     rows: dict[int, tuple[np.ndarray, np.ndarray]]
                     ) -> tuple[float, dict[str, torch.Tensor], dict[int, np.ndarray]]:
    """One step's loss and gradients.

    ``rows[t] = (unique_ids, weights[len(unique_ids), dim])`` for every table. Returns the
    loss, the dense gradients by parameter name, and per-table gradients of the unique rows."""
    leaves, embs = {}, []
    for t in range(cat.shape[1]):
        uniq, w = rows[t]
        leaf = torch.tensor(w).requires_grad_(True)
        leaves[t] = leaf
        pos = np.searchsorted(uniq, cat[:, t])
        embs.append(leaf[torch.from_numpy(pos)])
    model.zero_grad(set_to_none=True)
    logits = model(torch.from_numpy(dense), torch.stack(embs, dim=1))
    loss = nn.functional.binary_cross_entropy_with_logits(logits, torch.from_numpy(label))
    loss.backward()
    dense_g = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
    sparse_g = {t: leaf.grad.numpy() for t, leaf in leaves.items()}
    return float(loss.detach()), dense_g, sparse_g


def predict(model: DLRMDense, dense: np.ndarray, cat: np.ndarray,
            tables: dict[int, np.ndarray]) -> np.ndarray:
    """Click probabilities with full tables in hand (evaluation)."""
    with torch.no_grad():
        emb = torch.stack([torch.from_numpy(tables[t][cat[:, t]]) for t in range(cat.shape[1])], 1)
        return torch.sigmoid(model(torch.from_numpy(dense), emb)).numpy()
