"""What a console page raises to refuse a request: the status and the words the error page shows."""

from __future__ import annotations


class Refused(Exception):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status, self.text = status, text


__all__ = ["Refused"]
