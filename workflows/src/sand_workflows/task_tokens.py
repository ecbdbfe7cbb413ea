"""Task tokens of callback tasks (``.waitForTaskToken``, decision 0033): minted here, checked
by the host agent (``dev.sand.contracts.TaskTokens``) with the same rule.

A token names the app, the execution and the entry of the state that waits, and carries an
HMAC of those under the app's key, so nobody without the key can make one up and the agent
can check one before any wait is recorded (a callback may arrive before the wait is
registered). The app's key is derived from the cluster's secret; the agent hands it to the
app's sandbox only, so an app can mint tokens of its own executions and no other's.

Wire form: ``<b64url(app \\n execution \\n wait)>.<b64url(HMAC-SHA256(app key, those bytes))>``
(base64url without padding).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from dataclasses import dataclass

# contracts.thrift TASK_TOKEN_KEY_LABEL; kept literal here because the engine package has no
# dependency on the generated contracts (a test checks they agree).
KEY_LABEL = "sand-task-token\n"


def app_key(secret: str, app: str) -> bytes:
    """The key of ``app``'s task tokens under the cluster's ``secret``."""
    return hmac.new(secret.encode(), (KEY_LABEL + app).encode(), hashlib.sha256).digest()


@dataclass(frozen=True, slots=True)
class TaskTokenMinter:
    """Mints the task tokens of one app's executions."""

    app: str
    key: bytes

    @classmethod
    def local(cls, app: str) -> TaskTokenMinter:
        """A minter with a key of its own (the emulator: no agent ever checks its tokens)."""
        return cls(app, os.urandom(32))

    def mint(self, execution_id: str, wait_id: str) -> str:
        """The token of the wait ``wait_id`` (one entry of a state) of ``execution_id``."""
        payload = f"{self.app}\n{execution_id}\n{wait_id}".encode()
        mac = hmac.new(self.key, payload, hashlib.sha256).digest()
        return f"{_b64(payload)}.{_b64(mac)}"


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
