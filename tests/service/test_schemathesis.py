"""Property-based protocol test: schemathesis drives every operation of the OpenAPI document.

No request, however odd, may produce a 5xx, and every response must match
the document (status declared, body valid against its schema, content type).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from polymem.server import Service, create_app

_dir = Path(tempfile.mkdtemp(prefix="polymem-schemathesis-"))
service = Service(f"sqlite:///{_dir / 'st.db'}", embedder=None)
_, TOKEN = service.tokens.create_token("schemathesis", "default", ["read", "write", "admin"])
app = create_app(service)
# Snapshot bodies: arbitrary bytes, or JSON lines that look almost like a snapshot.
schemathesis.openapi.media_type("application/x-ndjson", st.one_of(
    st.binary(max_size=512),
    st.lists(st.dictionaries(st.sampled_from(["type", "format", "version", "record"]), st.integers() | st.text()),
             max_size=4).map(lambda rows: "\n".join(json.dumps(r) for r in rows).encode())))
schema = schemathesis.openapi.from_asgi("/openapi.json", app)


@schema.parametrize()
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_request_makes_the_service_fail_or_break_its_own_document(case: schemathesis.Case) -> None:
    # Every check but "a schema-valid request must succeed": the schema cannot say which namespace
    # operations need an embedder, or which vectors fit the server's model; those answer 422.
    case.call_and_validate(headers={"Authorization": f"Bearer {TOKEN}"},
                           excluded_checks=[schemathesis.checks.positive_data_acceptance])


class ServiceStateMachine(schema.as_state_machine()):  # type: ignore[misc]
    """Sequences of calls linked through their responses (a saved memory's id fed to get, update,
    history, delete…), inferred by schemathesis from the document: still no 5xx, no broken contract."""

    def get_call_kwargs(self, case: schemathesis.Case) -> dict[str, Any]:
        return {"headers": {"Authorization": f"Bearer {TOKEN}"}}

    def validate_response(self, response: Any, case: schemathesis.Case, additional_checks: Any = None,
                          **kwargs: Any) -> None:
        case.validate_response(response, excluded_checks=[schemathesis.checks.positive_data_acceptance])


TestServiceStateful = ServiceStateMachine.TestCase
TestServiceStateful.settings = settings(max_examples=15, stateful_step_count=6, deadline=None,
                                        suppress_health_check=list(HealthCheck))
