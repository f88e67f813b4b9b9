"""Fixtures every test directory shares: the real servers and the per-backend `backend` fixture
(polymem.testing.backends)."""

pytest_plugins = ["polymem.testing.backends"]
