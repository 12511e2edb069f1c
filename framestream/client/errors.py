"""Typed errors for what the service refuses: one class per contract error code, and the connection's own."""

from __future__ import annotations

from typing import Final

__all__ = [
    "BadInput",
    "BadMessage",
    "Capacity",
    "ClientError",
    "ConnectionLost",
    "DialogOpen",
    "Expired",
    "Forbidden",
    "NavigationFailed",
    "Printing",
    "RateLimited",
    "Replayed",
    "ServiceError",
    "Superseded",
    "TakenOver",
    "Unauthorized",
    "UnknownDialog",
    "UnknownFrame",
    "UnknownPage",
    "Unresponsive",
    "error_for",
]


class ClientError(Exception):
    """Anything the client could not do."""


class ConnectionLost(ClientError):
    """The WebSocket closed before the service answered (the step may or may not have been applied)."""


class ServiceError(ClientError):
    """The service answered with a contract error `code` (docs/protocol.md, "Errors")."""

    code: str = "internal"

    def __init__(self, message: str, *, code: str | None = None, frame: str | None = None,
                 seq: int | None = None, status: int | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.frame = frame
        self.seq = seq
        self.status = status  # the HTTP status, for errors answered over HTTP

    def __str__(self) -> str:
        where = f" (frame {self.frame})" if self.frame else ""
        return f"{self.code}{where}: {self.message}"


class Superseded(ServiceError):
    """A newer drive grant (usually a person's) drives the frame: this step was not applied."""

    code = "superseded"


class TakenOver(Superseded):
    """A person took the frame over and holds it: agent steps are refused until they hand it back (a `control`
    with `driver` null or `held` false, or `help-ended` after `request_help`). A kind of `Superseded`."""

    code = "taken-over"


class Forbidden(ServiceError):
    code = "forbidden"


class Unauthorized(ServiceError):
    code = "unauthorized"


class Expired(ServiceError):
    code = "expired"


class RateLimited(ServiceError):
    code = "rate-limited"


class UnknownFrame(ServiceError):
    code = "unknown-frame"


class Replayed(ServiceError):
    code = "replayed"


class BadInput(ServiceError):
    code = "bad-input"


class BadMessage(ServiceError):
    code = "bad-message"


class Capacity(ServiceError):
    code = "capacity"


class UnknownPage(ServiceError):
    code = "unknown-page"


class UnknownDialog(ServiceError):
    code = "unknown-dialog"


class DialogOpen(ServiceError):
    code = "dialog-open"


class Unresponsive(ServiceError):
    code = "unresponsive"


class Printing(ServiceError):
    """The page has been printing for 15 s: it takes no input until its print ends."""
    code = "printing"


class NavigationFailed(ServiceError):
    code = "navigation-failed"


_BY_CODE: Final[dict[str, type[ServiceError]]] = {
    cls.code: cls
    for cls in (Superseded, TakenOver, Forbidden, Unauthorized, Expired, RateLimited, UnknownFrame, Replayed, BadInput,
                BadMessage, Capacity, UnknownPage, UnknownDialog, DialogOpen, Unresponsive, Printing,
                NavigationFailed)
}


def error_for(code: str, message: str, *, frame: str | None = None, seq: int | None = None,
              status: int | None = None) -> ServiceError:
    """The typed error for a contract error code (a plain `ServiceError` for codes without a class)."""
    cls = _BY_CODE.get(code, ServiceError)
    return cls(message, code=code, frame=frame, seq=seq, status=status)
