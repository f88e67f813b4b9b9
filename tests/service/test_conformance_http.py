"""The core's conformance suite, through the real app: in-process (sync and async) and over loopback."""

from __future__ import annotations

import itertools
import math
import os
from pathlib import Path
from typing import Any

import pytest

from polymem import InvalidInput
from polymem.testing import MemoryConformance, call

from .conftest import Deployment

_names = itertools.count()
# Sync client in-process and async client over loopback by default (both drivers, both transports);
# POLYMEM_FULL_MATRIX=1 runs all four combinations.
MODES = ["asgi-sync", "asgi-async", "loopback-sync", "loopback-async"] if os.environ.get("POLYMEM_FULL_MATRIX") \
    else ["asgi-sync", "loopback-async"]


class TestHttpClient(MemoryConformance):
    @pytest.fixture(params=MODES)
    def open_store(self, request: pytest.FixtureRequest, tmp_path: Path) -> Any:
        shared = f"c{next(_names)}"
        made: list[Deployment] = []

        def factory(clock: Any, embedder: Any, fresh: bool = False, namespace: str = "default") -> Any:
            deployment = Deployment(tmp_path, f"{shared}-fresh" if fresh else shared, embedder=embedder, clock=clock)
            made.append(deployment)
            token = deployment.token(namespace, ("read", "write", "admin")) if namespace != "default" else None
            client = deployment.client(request.param, token=token)
            # Test-only bridge: one conformance test swaps the store's summarizer, which lives server-side.
            served = deployment.service.store("default").engine
            client.__class__ = type("ServedStore", (type(client),), {"engine": served})
            return client

        yield factory
        for deployment in made:
            deployment.close()

    def test_infinite_filter_bounds_lie_beyond_every_number_and_nan_equals_nothing(self, mem: Any) -> None:
        """JSON has no infinity or NaN: over HTTP such a filter value is a typed error before anything is sent."""
        for bound in (math.inf, -math.inf, math.nan):
            with pytest.raises(InvalidInput, match="cannot send"):
                call(mem.list(user_id="ann", filter={"metadata.price": {"$lt": bound}}))
