"""A client of hookd's publish and admin API, standard library only.

    import hookd
    client = hookd.Client("https://hookd.example.com", api_key)
    client.events.publish(type="invoice.paid", data={"id": "inv_1"})

The ops are generated from hookd's OpenAPI document (go run ./internal/clientgen).
"""

from ._client import Client, Retry
from ._errors import CODES, HookdError
from ._ops import *  # noqa: F401,F403 (the answers' types)
from ._ops import OPERATIONS

__all__ = ["Client", "Retry", "HookdError", "CODES", "OPERATIONS"]
