"""Authentication: every request needs a live token; tokens are stored hashed."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from polymem import PermissionDeniedError
from polymem.server._errors import AuthenticationError


async def test_a_request_without_a_token_is_unauthenticated(deploy: Any) -> None:
    d = deploy()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=d.app), base_url="http://t") as http:
        response = await http.post("/v1/memory/recall", json={"query": "blue", "user_id": "ann"})
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthenticated"


@pytest.mark.parametrize("token", ["pm_000000000000_wrong-secret-wrong-secret", "not-a-token", "pm_"])
async def test_an_unknown_or_malformed_token_is_refused(deploy: Any, token: str) -> None:
    with pytest.raises(AuthenticationError):
        await deploy().client(token=token).save("I like blue", user_id="ann")


async def test_a_revoked_token_stops_working_at_once(deploy: Any) -> None:
    d = deploy()
    token = d.token()
    mem = d.client(token=token)
    await mem.save("I like blue", user_id="ann")
    d.service.tokens.revoke(token[3:15])
    with pytest.raises(AuthenticationError, match="revoked"):
        await mem.recall("blue", user_id="ann")


def test_tokens_are_stored_only_as_hashes(deploy: Any) -> None:
    d = deploy()
    token = d.token()
    with d.service.db.read() as conn:
        dump = "\n".join(str(row) for row in conn.execute("SELECT * FROM tokens"))
    assert token[16:] not in dump and token not in dump


async def test_a_read_only_token_cannot_write(deploy: Any) -> None:
    d = deploy()
    reader = d.client(token=d.token(permissions=("read",)))
    with pytest.raises(PermissionDeniedError):
        await reader.save("I like blue", user_id="ann")
    assert list(await reader.recall("blue", user_id="ann")) == []


async def test_the_service_can_run_without_auth_for_trusted_networks(deploy: Any) -> None:
    d = deploy(auth=False)
    mem = d.client(token="")
    assert (await mem.save("I like blue", user_id="ann")).namespace == "default"
