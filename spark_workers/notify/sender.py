"""Deliver notification messages as WebSocket text messages (ARCHITECTURE "transport").

Delivery is at-least-once: a message counts as delivered once the WebSocket frame is written on
an open connection. ``ON_FAILURE PAUSE`` retries with exponential back-off until delivered (the
stream waits: it is paused), ``DROP`` tries twice, records the failure and goes on (seed 000,
"notification_options"). Every attempt is reported to ``on_attempt`` (the delivery log).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from websockets.sync.client import ClientConnection, connect

OPEN_TIMEOUT_S = 5.0
BACKOFF_START_S = 0.5
BACKOFF_MAX_S = 30.0


@dataclass
class Attempt:
    """One delivery attempt for the delivery log."""

    url: str
    message_id: str
    events: int
    ok: bool
    latency_ms: float
    error: str = ""
    attempt: int = 1


class DeliveryAborted(Exception):
    """A PAUSE delivery was abandoned because the stream is stopping (the micro-batch is not
    committed, so it is replayed, and the message re-sent, when the stream starts again)."""


class Sender:
    """Keeps one connection per URL and sends messages over it.

    Args:
        on_attempt: called after every attempt (delivery log).
        should_stop: polled while retrying; True aborts a PAUSE delivery.
        sleep: injectable for tests.
    """

    def __init__(
        self,
        on_attempt: Callable[[Attempt], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.on_attempt = on_attempt or (lambda a: None)
        self.should_stop = should_stop or (lambda: False)
        self.sleep = sleep
        self._conns: dict[str, ClientConnection] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            for c in self._conns.values():
                with contextlib.suppress(Exception):
                    c.close()
            self._conns.clear()

    def _send_once(self, url: str, text: str) -> None:
        with self._lock:
            conn = self._conns.get(url)
        for fresh in (False, True):
            if conn is None or fresh:
                if conn is not None:
                    with contextlib.suppress(Exception):
                        conn.close()
                # a long-lived connection reused across micro-batches (websockets: legacy=True)
                conn = connect(url, open_timeout=OPEN_TIMEOUT_S, close_timeout=2, max_size=None, legacy=True)
                with self._lock:
                    self._conns[url] = conn
            try:
                conn.send(text)
                return
            except Exception:
                if fresh:
                    with self._lock:
                        self._conns.pop(url, None)
                    raise

    def deliver(self, url: str, message: dict[str, Any], *, on_failure: str) -> bool:
        """Send one message to one URL per the failure policy; True when delivered."""
        text = json.dumps(message, separators=(",", ":"), default=str)
        events = sum(len(s.get("events", [])) for s in message.get("streams", []))
        attempt = 0
        delay = BACKOFF_START_S
        while True:
            attempt += 1
            t0 = time.perf_counter()
            try:
                self._send_once(url, text)
                self.on_attempt(
                    Attempt(
                        url,
                        message["messageId"],
                        events,
                        True,
                        (time.perf_counter() - t0) * 1000,
                        "",
                        attempt,
                    )
                )
                return True
            except Exception as e:  # connection refused, handshake rejected, closed socket...
                err = f"{type(e).__name__}: {e}"
                self.on_attempt(
                    Attempt(
                        url,
                        message["messageId"],
                        events,
                        False,
                        (time.perf_counter() - t0) * 1000,
                        err,
                        attempt,
                    )
                )
            if on_failure != "PAUSE" and attempt >= 2:
                return False
            if self.should_stop():
                raise DeliveryAborted(f"stopping while notifications to {url} fail")
            self.sleep(delay)
            delay = min(delay * 2, BACKOFF_MAX_S)
