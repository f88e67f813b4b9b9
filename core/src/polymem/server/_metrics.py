"""A few Prometheus metrics, exposed in the text format (no client library needed)."""

from __future__ import annotations

import threading
from collections import defaultdict

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """Request counts and latencies by route, in-flight requests, filter and guard counters."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: dict[tuple[str, str, int], int] = defaultdict(int)
        self.latency: dict[str, list[int]] = {}
        self.latency_sum: dict[str, float] = defaultdict(float)
        self.inflight = 0
        self.events: dict[tuple[str, str], int] = defaultdict(int)

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        with self._lock:
            self.requests[(method, route, status)] += 1
            counts = self.latency.setdefault(route, [0] * (len(BUCKETS) + 1))
            for i, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    counts[i] += 1
            counts[-1] += 1
            self.latency_sum[route] += seconds

    def event(self, name: str, label: str) -> None:
        with self._lock:
            self.events[(name, label)] += 1

    def render(self) -> str:
        lines = ["# HELP polymem_requests_total HTTP requests by method, route and status.",
                 "# TYPE polymem_requests_total counter"]
        with self._lock:
            for (method, route, status), n in sorted(self.requests.items()):
                lines.append(f'polymem_requests_total{{method="{method}",route="{route}",status="{status}"}} {n}')
            lines += ["# HELP polymem_request_duration_seconds Request latency by route.",
                      "# TYPE polymem_request_duration_seconds histogram"]
            for route, counts in sorted(self.latency.items()):
                for bound, n in zip(BUCKETS, counts):
                    lines.append(f'polymem_request_duration_seconds_bucket{{route="{route}",le="{bound}"}} {n}')
                lines.append(f'polymem_request_duration_seconds_bucket{{route="{route}",le="+Inf"}} {counts[-1]}')
                lines.append(f'polymem_request_duration_seconds_sum{{route="{route}"}} {self.latency_sum[route]:.6f}')
                lines.append(f'polymem_request_duration_seconds_count{{route="{route}"}} {counts[-1]}')
            lines += ["# HELP polymem_inflight_requests Requests being served.",
                      "# TYPE polymem_inflight_requests gauge", f"polymem_inflight_requests {self.inflight}",
                      "# HELP polymem_safety_events_total Write-filter and read-guard decisions.",
                      "# TYPE polymem_safety_events_total counter"]
            for (name, label), n in sorted(self.events.items()):
                lines.append(f'polymem_safety_events_total{{event="{name}",label="{label}"}} {n}')
        return "\n".join(lines) + "\n"
