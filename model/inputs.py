"""The one bounded reader of every file a user hands gpufleet, and the bounded JSON parser.

- Only a regular file is read. A FIFO, a socket or a device is refused before it is opened, since reading one can
  block for ever or never end.
- A file is read up to a size limit, then decoded as UTF-8.
- JSON is parsed with limits on nesting and on numbers: no integer longer than MAX_INT_DIGITS digits, no float
  that overflows to infinity, no NaN or Infinity (RFC 8259 §6 has none).
- A JSON object naming a key twice is refused. RFC 8259 §4 leaves which value counts to each parser, so the
  file could mean one thing to a reviewer and another to gpufleet.
- Every problem is a SpecError naming the file. YAML has its own limits (model.load.load_yaml).
"""

from __future__ import annotations

import json
import math
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Far above any real input, low enough that no input makes a command spend more than a moment or a few MB.
MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 64  # nesting of mappings and lists
MAX_INT_DIGITS = 30  # no count, size or price in an estate comes near 10**30


@dataclass
class SpecError(Exception):
    """Bad input: one message per problem, each naming the file and the YAML path."""

    problems: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(self.problems)


def shown(path: Path | str) -> str:
    """A path as a message quotes it: NUL made visible, at most 120 characters."""
    text = str(path).replace("\x00", "\\0")
    return text if len(text) <= 120 else text[:120] + "..."


def read_bytes(path: Path, missing: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """A regular file's bytes, at most `limit`; `missing` is the message when it does not exist."""
    try:
        mode = os.stat(path).st_mode
        if stat.S_ISDIR(mode):
            raise SpecError([f"{shown(path)}: is a directory, not a file"])
        if not stat.S_ISREG(mode):
            raise SpecError([f"{shown(path)}: not a regular file (a pipe, socket or device); give a file"])
        # O_NONBLOCK: should the path become a FIFO after the check, opening it does not wait for a writer.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise SpecError([f"{shown(path)}: not a regular file (a pipe, socket or device); give a file"])
            data = f.read(limit + 1)
    except FileNotFoundError:
        raise SpecError([f"{shown(path)}: {missing}"]) from None
    except (OSError, ValueError) as err:  # a symlink loop, a name too long, a NUL in the name, no permission
        reason = getattr(err, "strerror", None) or str(err)
        raise SpecError([f"{shown(path)}: cannot be read: {reason}"]) from None
    if len(data) > limit:
        raise SpecError([f"{shown(path)}: larger than {_size(limit)}; not a gpufleet input file"])
    return data


def _size(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MB" if limit >= 1024 * 1024 else f"{limit} bytes"


def read_text(path: Path, missing: str, limit: int = MAX_FILE_BYTES) -> str:
    """A regular UTF-8 text file's contents (see read_bytes)."""
    data = read_bytes(path, missing, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise SpecError(
            [f"{shown(path)}: not UTF-8 text (byte 0x{data[err.start]:02x} on line {line}); save it as UTF-8"]
        ) from None


class JsonLimitError(ValueError):
    """JSON text beyond the limits above (or not JSON at all); the message says where."""


def load_json(text: str) -> Any:
    """Parse JSON text within the limits; raises JsonLimitError (a ValueError) on anything else."""
    try:
        doc = json.loads(
            text, parse_int=_int, parse_float=_float, parse_constant=_constant, object_pairs_hook=_unique_keys
        )
    except json.JSONDecodeError as err:
        raise JsonLimitError(f"not valid JSON: {err}") from None
    except RecursionError:  # the parser's own guard, far deeper than MAX_DEPTH
        raise JsonLimitError(f"nested deeper than {MAX_DEPTH} levels") from None
    _check_depth(doc)
    return doc


def _check_depth(doc: Any) -> None:
    level = [doc]
    for _ in range(MAX_DEPTH):
        level = [v for x in level for v in (x.values() if isinstance(x, dict) else x if isinstance(x, list) else ())]
        if not level:
            return
    raise JsonLimitError(f"nested deeper than {MAX_DEPTH} levels")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise JsonLimitError(
                f"the key {key[:40]!r} appears twice in one object (RFC 8259 §4: names should be unique)"
            )
        obj[key] = value
    return obj


def _int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise JsonLimitError(f"an integer longer than {MAX_INT_DIGITS} digits ({digits[:20]}...)")
    return int(digits)


def _float(text: str) -> float:
    if len(text) > 400:  # no float is written with more digits than this; parsing a longer one costs time
        raise JsonLimitError(f"a number written with more than 400 characters ({text[:20]}...)")
    value = float(text)
    if not math.isfinite(value):
        raise JsonLimitError(f"{text[:40]} is too large for a number")
    return value


def _constant(name: str) -> Any:
    raise JsonLimitError(f"{name} is not a JSON number (RFC 8259 §6)")


def read_json(path: Path, missing: str, limit: int = MAX_FILE_BYTES) -> Any:
    """A regular file of JSON text within the limits; every problem is a SpecError naming the file."""
    text = read_text(path, missing, limit)
    try:
        return load_json(text)
    except JsonLimitError as err:
        raise SpecError([f"{shown(path)}: {err}"]) from None
