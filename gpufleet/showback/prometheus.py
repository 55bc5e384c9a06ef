"""A small client for the Prometheus HTTP API: instant queries, their answers checked against the documented envelope.

- The API: https://prometheus.io/docs/prometheus/latest/querying/api/ (`GET /api/v1/query` with `query` and `time`).
  Every answer is `{status, data: {resultType, result}}`; a refusal is `status: error` with `errorType` and `error`,
  also on HTTP 400, 422 and 503.
- Only vectors are accepted: each sample's value is a string, as the API encodes it.
- A bearer token (GPUFLEET_PROMETHEUS_TOKEN) or a user and password (GPUFLEET_PROMETHEUS_USER and
  GPUFLEET_PROMETHEUS_PASSWORD) authenticate, when set.
- Every failure is a PrometheusError with one line naming the endpoint.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

TIMEOUT_SECONDS = 30.0
TOKEN_ENV = "GPUFLEET_PROMETHEUS_TOKEN"
USER_ENV, PASSWORD_ENV = "GPUFLEET_PROMETHEUS_USER", "GPUFLEET_PROMETHEUS_PASSWORD"
QUERY_PATH = "/api/v1/query"


class PrometheusError(Exception):
    """A Prometheus that cannot be asked, or whose answer is an error or not the API's envelope."""


@dataclass(frozen=True)
class Sample:
    labels: dict[str, str]
    value: float


def endpoint(url: str) -> str:
    """The query endpoint under `url` (which may carry a path prefix, e.g. behind a proxy)."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError as e:  # e.g. an unclosed IPv6 bracket
        raise PrometheusError(f"--prometheus {url!r}: not a URL ({e})") from None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise PrometheusError(f"--prometheus {url!r}: not an http(s) URL (e.g. http://localhost:9090)")
    if parts.query or parts.fragment:
        raise PrometheusError(f"--prometheus {url!r}: give the server's base URL, without a query or fragment")
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") + QUERY_PATH, "", ""))


def _headers(environ: Mapping[str, str]) -> dict[str, str]:
    headers = {"Accept": "application/json"}
    if token := environ.get(TOKEN_ENV):
        headers["Authorization"] = f"Bearer {token}"
    elif user := environ.get(USER_ENV):
        pair = f"{user}:{environ.get(PASSWORD_ENV, '')}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
    return headers


def query(url: str, expr: str, at: dt.datetime, timeout: float = TIMEOUT_SECONDS) -> list[Sample]:
    """The instant vector `expr` evaluates to at `at`, from the Prometheus at `url`."""
    where = endpoint(url)
    params = urllib.parse.urlencode({"query": expr, "time": f"{at.timestamp():.3f}"})
    request = urllib.request.Request(f"{where}?{params}", headers=_headers(os.environ))
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            body = answer.read()
    except urllib.error.HTTPError as e:
        body = e.read()
        refusal = _refusal(body)
        raise PrometheusError(f"{where}: {refusal or f'answered HTTP {e.code} {e.reason}'}") from None
    except TimeoutError:
        raise PrometheusError(f"{where}: no answer within {timeout:g} seconds") from None
    except urllib.error.URLError as e:
        if isinstance(e.reason, TimeoutError):
            raise PrometheusError(f"{where}: no answer within {timeout:g} seconds") from None
        reason = e.reason.strerror if isinstance(e.reason, OSError) and e.reason.strerror else e.reason
        raise PrometheusError(f"{where}: cannot be reached ({reason})") from None
    except OSError as e:
        raise PrometheusError(f"{where}: cannot be reached ({e.strerror or e})") from None
    return vector(where, body)


def _refusal(body: bytes) -> str | None:
    """The error an error envelope carries, or None when `body` is not one."""
    try:
        doc = json.loads(body)
    except ValueError:
        return None
    if isinstance(doc, dict) and doc.get("status") == "error":
        return f"Prometheus refused the query ({doc.get('errorType', 'error')}: {doc.get('error', 'no message')})"
    return None


def vector(where: str, body: bytes) -> list[Sample]:
    """The samples of an instant-vector answer; a PrometheusError for anything else."""
    if (refusal := _refusal(body)) is not None:
        raise PrometheusError(f"{where}: {refusal}")
    try:
        doc = json.loads(body)
    except ValueError:
        raise PrometheusError(f"{where}: the answer is not JSON, so not the Prometheus API") from None
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, dict) or doc.get("status") != "success":
        raise PrometheusError(f"{where}: the answer is not a Prometheus API envelope ({{status, data}})")
    if data.get("resultType") != "vector":
        raise PrometheusError(f"{where}: expected a vector result, got resultType {data.get('resultType')!r}")
    result = data.get("result")
    if not isinstance(result, list):
        raise PrometheusError(f"{where}: data.result is not a list")
    return [_sample(where, i, item) for i, item in enumerate(result)]


def _sample(where: str, i: int, item: Any) -> Sample:
    labels = item.get("metric") if isinstance(item, dict) else None
    value = item.get("value") if isinstance(item, dict) else None
    if not isinstance(labels, dict) or not isinstance(value, list) or len(value) != 2:
        raise PrometheusError(f"{where}: data.result[{i}] is not {{metric, value: [time, value]}}")
    try:
        number = float(value[1])
    except (TypeError, ValueError):
        raise PrometheusError(f"{where}: data.result[{i}].value {value[1]!r} is not a number") from None
    if not math.isfinite(number):
        raise PrometheusError(f"{where}: data.result[{i}].value is {value[1]}")
    return Sample({str(k): str(v) for k, v in labels.items()}, number)
