"""The error every `gpufleet burst` check raises when a burst cannot go ahead."""

from __future__ import annotations


class BurstError(Exception):
    """A burst that cannot go ahead. Nothing was changed; the message says why. exit_code: 2 bad input, 1 refused."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code
