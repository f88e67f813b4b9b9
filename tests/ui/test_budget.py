"""The web page spends its token's request budget: the same rate limiter as the API."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from polymem.server import Service, create_app


def test_pages_and_api_calls_of_one_token_share_its_rate_limit(tmp_path: Path) -> None:
    service = Service(f"sqlite:///{tmp_path / 'memory.db'}", embedder=None)
    _, token = service.tokens.create_token("agent", "default", ["read", "write"])
    with TestClient(create_app(service, rate=0.001, burst=3), base_url="http://polymem.test") as http:
        http.post("/ui/signin", data={"token": token}, follow_redirects=False)  # budgeted by address
        assert http.get("/ui/memories").status_code == 200
        api = {"authorization": f"Bearer {token}"}
        assert [http.get("/v1/info", headers=api).status_code for _ in range(3)] == [200, 200, 429]
        page = http.get("/ui/memories")
        assert page.status_code == 429 and "rate limited" in page.text and page.headers["retry-after"]
