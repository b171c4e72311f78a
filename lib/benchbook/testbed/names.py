"""Names of everything benchbook creates on a host: a fixed prefix plus a run token.

Every namespace, veth, cgroup, DPDK file prefix and container is called
``bb-<token>-<role>``, so the start-up sweep can find (only) benchbook's leftovers and
tell which run they belong to. Linux interface names hold at most 15 characters, hence
the short token (6 hex digits) and short role names.
"""

from __future__ import annotations

import re
import secrets

PREFIX = "bb-"
TOKEN_HEX = 6
IFNAMSIZ = 15
_NAME_RE = re.compile(rf"^bb-([0-9a-f]{{{TOKEN_HEX}}})-([A-Za-z0-9_.-]+)$")


def new_token() -> str:
    """A fresh run token (6 lowercase hex digits)."""
    return secrets.token_hex(TOKEN_HEX // 2)


def make_name(token: str, role: str, *, interface: bool = False) -> str:
    """``bb-<token>-<role>``; interface names are checked against the kernel's 15-char limit."""
    if not re.fullmatch(rf"[0-9a-f]{{{TOKEN_HEX}}}", token):
        raise ValueError(f"run token {token!r}: expected {TOKEN_HEX} lowercase hex digits")
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", role):
        raise ValueError(f"role {role!r}: expected letters, digits, '_', '.', '-'")
    name = f"{PREFIX}{token}-{role}"
    if interface and len(name) > IFNAMSIZ:
        raise ValueError(f"interface name {name!r} is {len(name)} characters; Linux allows {IFNAMSIZ}")
    return name


def token_of(name: str) -> str | None:
    """The run token of a benchbook-owned name, or None when the name is not benchbook's."""
    m = _NAME_RE.match(name)
    return m.group(1) if m else None
