"""A local Prometheus stand-in: `/api/v1/query` answers with recorded answer files, chosen by the query's rule."""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from model.observability import rules

ANSWERS = Path(__file__).parent / "answers"


@dataclass
class Recorded:
    """What the stand-in answers (per rule: an answer file and an HTTP status) and what it was asked."""

    answers: dict[str, tuple[str, int]]
    asked: list[dict[str, str]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)


def _handler(recorded: Recorded) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            params = dict(urllib.parse.parse_qsl(url.query))
            recorded.asked.append({"path": url.path, **params})
            recorded.headers.append(dict(self.headers))
            rule = next((r for r in recorded.answers if r in params.get("query", "")), None)
            if url.path != "/api/v1/query" or rule is None:
                self.send_error(404)
                return
            name, status = recorded.answers[rule]
            body = (ANSWERS / name).read_bytes()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # quiet
            pass

    return Handler


RECORDED = {rules.ALLOCATED_BY_POOL: ("allocated.json", 200), rules.USED_BY_POOL: ("used.json", 200)}


@contextmanager
def prometheus(answers: dict[str, tuple[str, int]] | None = None) -> Iterator[tuple[str, Recorded]]:
    """(base URL, what it recorded) of a stand-in serving `answers` (default: the recorded day of the tests)."""
    recorded = Recorded(dict(RECORDED if answers is None else answers))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(recorded))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", recorded
    finally:
        server.shutdown()
        server.server_close()
