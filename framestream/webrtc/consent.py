"""ICE consent freshness (RFC 7675) that a slow link's full queue does not end.

aioice checks consent every 5 s with one STUN request answered within 0.5 s or failed, and closes the connection
after six failures in a row. Through a link whose queue holds 300 ms each way (a 1 Mbit/s viewer while a keyframe
drains) every check fails, and a viewer that was being served lost its connection after about 35 s
(docs/performance.md, "WebRTC"). RFC 7675 sends each check as an ordinary STUN transaction, retransmitted with a
doubling timeout, and lets consent expire 30 s after the last answered one. This loop does that, installed on the
one aioice connection of a peer (as `report_remb` wraps one sender): nothing else of aioice changes.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from typing import Any

from aioice import stun

log = logging.getLogger(__name__)

CHECK_EVERY_S = 5.0  # RFC 7675: every 4-6 s (randomised), as aioice
RETRANSMISSIONS = 3  # sent at 0, 0.5, 1.5 and 3.5 s, answered by 7.5 s: a round trip of seconds still answers
EXPIRES_AFTER_S = 30.0  # RFC 7675: consent is lost this long after the last answered check


def install(connection: Any) -> None:
    """Make `connection` (an `aioice.Connection`, before it connects) check consent by this module's rules.
    aioice starts `self.query_consent()` once connected; an attribute of the instance takes its place."""
    async def query_consent() -> None:
        await _check_consent(connection)

    connection.query_consent = query_consent


async def _check_consent(connection: Any) -> None:
    assert connection.remote_password is not None  # consent checks start once connect() has it
    key = connection.remote_password.encode("utf8")
    answered_at = time.monotonic()
    while True:
        await asyncio.sleep(CHECK_EVERY_S * (0.8 + 0.4 * random.random()))
        for pair in list(connection._nominated.values()):
            request = connection.build_request(pair, nominate=False)
            try:
                await pair.protocol.request(request, pair.remote_addr, integrity_key=key,
                                            retransmissions=RETRANSMISSIONS)
                answered_at = time.monotonic()
            except stun.TransactionError:
                pass
        if time.monotonic() - answered_at >= EXPIRES_AFTER_S:
            log.info("ICE consent expired: no check answered for %.0f s", time.monotonic() - answered_at)
            connection._query_consent_task = None  # (as aioice: close() must not cancel this task)
            await connection.close()
            return
