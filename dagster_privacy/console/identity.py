"""Who is asking: a local users file (scrypt-hashed passwords) with server-side sessions, or a trusted
reverse proxy's header. Roles: ``viewer`` reads, ``officer`` decides. Nobody anonymous decides.

The users file is JSON, ``{"users": [{"name": ..., "role": "officer", "scrypt": "N$r$p$salt$hash"}]}``,
written by ``dagster-privacy console add-user``; a user without ``scrypt`` can only come through the
proxy. Passwords are hashed with scrypt (``hashlib.scrypt``, OpenSSL's), a fresh 16-byte salt each.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..data.atomic import write_atomically
from ..errors import OwnMessage

ROLES = ("viewer", "officer")
#: the header a reverse proxy proves itself with (its value: the shared secret, set by the proxy, which
#: overwrites any client's)
PROXY_SECRET_HEADER = "X-Dagster-Privacy-Proxy-Secret"
#: a shared secret shorter than this is refused (a guessable secret proves nothing)
PROXY_SECRET_MIN = 32
#: scrypt cost: N = 2^14, r = 8, p = 1 (16 MB, about 50 ms here): OWASP's minimum for scrypt
SCRYPT = (2**14, 8, 1)


class IdentityError(OwnMessage, ValueError):
    """A users file or a user that cannot be used: one line."""


@dataclass(frozen=True)
class User:
    name: str
    role: str
    #: a fingerprint of the password hash the user signed in with: a new password ends the session
    credential: str = field(default="", compare=False)

    @property
    def may_decide(self) -> bool:
        return self.role == "officer"


def hash_password(password: str, *, salt: bytes | None = None, cost: tuple[int, int, int] = SCRYPT) -> str:
    n, r, p = cost
    salt = salt or secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=n, r=r, p=p, dklen=32, maxmem=64 * 2**20)
    return f"{n}${r}${p}${salt.hex()}${digest.hex()}"


def password_matches(password: str, stored: object) -> bool:
    try:
        n, r, p, salt, want = str(stored).split("$")
        got = hash_password(password, salt=bytes.fromhex(salt), cost=(int(n), int(r), int(p)))
    except (ValueError, TypeError, UnicodeError):
        return False
    return hmac.compare_digest(got.rsplit("$", 1)[1], want)


#: compared against when the user does not exist, so a login costs one scrypt either way
_DUMMY = hash_password("-", salt=b"\0" * 16)


def credential_of(entry: dict[str, str]) -> str:
    """A fingerprint of a user's stored password hash (never the hash itself): it changes with the
    password (``add-user`` hashes with a fresh salt), and so ends the sessions signed in with the old."""
    return hashlib.sha256(str(entry.get("scrypt", "")).encode()).hexdigest()


def _name(name: str) -> str:
    name = name.strip()
    if not name or len(name) > 200 or any(not c.isprintable() for c in name):
        raise IdentityError("a user name is 1 to 200 printable characters")
    return name


class Users:
    """The users file, read on every login (an edit takes effect without a restart)."""

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = Path(path) if path else None

    def _read(self) -> list[dict[str, str]]:
        if self.path is None or not self.path.exists():
            return []
        try:
            users = json.loads(self.path.read_text(encoding="utf-8")).get("users", [])
            if not isinstance(users, list):
                raise TypeError
        except (OSError, ValueError, AttributeError, TypeError):
            raise IdentityError(f"users file {self.path}: not the JSON this console writes") from None
        return [
            u
            for u in users
            if isinstance(u, dict) and u.get("role") in ROLES and isinstance(u.get("name"), str)
        ]

    def get(self, name: str) -> dict[str, str] | None:
        return next((u for u in self._read() if u["name"] == name), None)

    def login(self, name: str, password: str) -> User | None:
        entry = self.get(name.strip())
        stored = entry.get("scrypt") if entry else None
        if entry is None or not stored:
            password_matches(password, _DUMMY)  # the same time whether the user exists or not
            return None
        if not password_matches(password, stored):
            return None
        return User(entry["name"], entry["role"], credential_of(entry))

    def add(self, name: str, role: str, password: str | None) -> None:
        """Add or replace a user (``password`` None: a proxy-only user, no password login)."""
        if self.path is None:
            raise IdentityError("no users file given (--users)")
        if role not in ROLES:
            raise IdentityError(f"role must be one of {', '.join(ROLES)}")
        name = _name(name)
        entry = {"name": name, "role": role}
        if password is not None:
            if len(password) < 12:
                raise IdentityError("a password has at least 12 characters")
            try:
                entry["scrypt"] = hash_password(password)
            except UnicodeError:
                raise IdentityError("the password is not valid UTF-8 text") from None
        if self.path.exists() and not self.path.is_file():
            raise IdentityError(f"users file {self.path}: not a file")
        users = [u for u in self._read() if u["name"] != name] + [entry]

        data = json.dumps({"users": users}, indent=2).encode("utf-8")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(self.path, lambda f: f.write(data), mode=0o600)  # hashes: owner only
        except OSError as exc:
            raise IdentityError(f"users file {self.path}: cannot be written ({type(exc).__name__})") from None


@dataclass
class Session:
    user: User
    csrf: str
    started: float
    seen: float


@dataclass
class Sessions:
    """Server-side sessions: the cookie holds a random token only. Idle and absolute timeouts."""

    idle_seconds: float = 30 * 60
    max_seconds: float = 8 * 3600
    _by_token: dict[str, Session] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self, user: User) -> str:
        token = secrets.token_urlsafe(32)
        now = time.monotonic()
        with self._lock:
            for old in [t for t, s in self._by_token.items() if self._expired(s, now)]:
                del self._by_token[old]  # expired sessions do not pile up
            self._by_token[token] = Session(user, secrets.token_urlsafe(32), now, now)
        return token

    def _expired(self, s: Session, now: float) -> bool:
        return now - s.seen > self.idle_seconds or now - s.started > self.max_seconds

    def get(self, token: str | None) -> Session | None:
        if not token:
            return None
        now = time.monotonic()
        with self._lock:
            s = self._by_token.get(token)
            if s is None:
                return None
            if self._expired(s, now):
                del self._by_token[token]
                return None
            s.seen = now
            return s

    def end(self, token: str | None) -> None:
        with self._lock:
            self._by_token.pop(token or "", None)


def same_token(a: str | None, b: str | None) -> bool:
    return bool(a) and bool(b) and hmac.compare_digest(str(a), str(b))


__all__ = [
    "ROLES",
    "IdentityError",
    "Session",
    "Sessions",
    "User",
    "Users",
    "credential_of",
    "hash_password",
    "same_token",
]
