from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class OpSpec:
    """How the client calls one op: what the generated methods hand to the transport."""

    op: str
    """The operationId, e.g. "webhooks.create"."""
    method: str
    path: str
    """The path with {name} for the path parameters."""
    query: tuple[str, ...] = ()
    """The arguments sent as query parameters."""
    headers: dict[str, str] = field(default_factory=dict)
    """The arguments sent as headers, by the header's name."""
    body: bool = False
    """Whether the other arguments are a JSON body."""
