"""Fixtures for the integration suite (helpers live in harness.py, the file tree in corpus.py).

The suite drives the real `narnia` binary through pipes. The binary is taken from the
environment variable NARNIA_BIN, else `.build/debug/narnia` relative to the repository root.
Every test gets its own HOME and XDG directories, and `NARNIA_INSECURE_TEST_KDF=1`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import build_corpus  # noqa: E402
from harness import Narnia, binary_path  # noqa: E402


@pytest.fixture(scope="session")
def narnia_bin() -> Path:
    path = binary_path()
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"narnia binary not found or not executable at {path} "
                    f"(build it, or set NARNIA_BIN)", pytrace=False)
    return path


@pytest.fixture
def narnia(narnia_bin, tmp_path) -> Narnia:
    """A Narnia runner with a fresh HOME and a vault path that does not exist yet."""
    return Narnia(narnia_bin, tmp_path)


@pytest.fixture
def vault(narnia) -> Narnia:
    """A Narnia runner whose vault has been created with `init`."""
    narnia.init()
    return narnia


@pytest.fixture
def host(tmp_path) -> Path:
    """A scratch directory on the host side."""
    d = tmp_path / "host"
    d.mkdir()
    return d


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    """The varied file tree of corpus.py, built once per session (treat as read-only)."""
    return build_corpus(tmp_path_factory.mktemp("corpus"))
