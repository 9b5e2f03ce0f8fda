"""The held-out split of the PyTorch ground truth, fixed before any fitting (no torch import, so
CPU-side scripts read the same rule as the GPU-side ones that label the rows)."""


def split_of(row):
    """The held-out split: Llama 3.2 3B shapes, odd shapes, and grid points between the fitted
    ones (batch 2 and 16, context 2048, hidden 3072, 4096 tokens). Everything else is 'fit'."""
    hold = (row.get("model") in ("llama-3.2-3b", "odd")
            or row.get("heads") == 24
            or row.get("batch") in (2, 16)
            or row.get("context") == 2048
            or row.get("hidden") == 3072
            or row.get("tokens") == 4096)
    return "holdout" if hold else "fit"
