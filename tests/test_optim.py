from __future__ import annotations

import torch

from bimine.encoders.torch_optim import RowAdam


def test_rowadam_equals_sparseadam():
    torch.manual_seed(0)
    w1 = torch.nn.Parameter(torch.randn(50, 4))
    w2 = torch.nn.Parameter(w1.detach().clone())
    o1 = torch.optim.SparseAdam([w1], lr=0.01)
    o2 = RowAdam([w2], lr=0.01)
    for _ in range(6):
        idx = torch.randint(0, 50, (30,))  # repeated rows: gradients must be summed
        val = torch.randn(30, 4)
        g = torch.sparse_coo_tensor(idx[None], val, (50, 4), check_invariants=True)
        w1.grad, w2.grad = g.clone(), g.clone()
        o1.step()
        o2.step()
        torch.testing.assert_close(w1, w2, atol=2e-5, rtol=1e-4)
