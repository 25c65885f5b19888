from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED = Path(os.environ.get("BIMINE_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The project's shared data folder; tests that need it skip when it is absent."""
    if not (SHARED / "train").is_dir():
        pytest.skip(f"shared data not found at {SHARED} (set BIMINE_SHARED_DATA)")
    return SHARED


@pytest.fixture(autouse=True, scope="session")
def _one_thread():
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass
