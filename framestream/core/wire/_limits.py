"""The contract's limits on client messages, plus bounds that keep one message's work small."""

from __future__ import annotations

from typing import Final

MAX_MESSAGE_BYTES: Final = 65536
MAX_EVENTS: Final = 256
MAX_TEXT_CHARS: Final = 10000  # `text` and `paste` events, a prompt's answer
MAX_TOUCH_POINTS: Final = 10
MAX_ID_CHARS: Final = 256  # frame, page and dialog ids
MAX_TOKEN_CHARS: Final = 4096  # same bound as core.tokens.MAX_TOKEN_CHARS
MAX_KEY_CHARS: Final = 64  # longest DOM key/code names are about 25 characters
MAX_SEQ: Final = 2**53 - 1  # what a JavaScript number holds exactly
MAX_CLICKS: Final = 16
MAX_BUTTONS_MASK: Final = 31  # left 1, right 2, middle 4, back 8, forward 16
MAX_WHEEL_DELTA: Final = 1e6
MAX_TOUCH_ID: Final = 2**31 - 1
MAX_URL_CHARS: Final = 8192  # same bound as frames.urls.MAX_URL_LENGTH; the frame checks the URL itself
