"""When a changed picture goes as copies (media/moved_pictures.py) and when x264 takes over: pure, counted in
pictures and bytes, owned by the frame's H264Encoder.

Copies skip x264's fixed work on a large picture, but each time they stop x264 must start again with an IDR of
the whole picture (it did not see them). So: look for motion only where it may pay; start copies only where they
beat x264; once going, keep them through pictures x264 would do better while those cost less than the IDR would;
and pause after a stop, longer each time copies stop soon after starting.
"""

from __future__ import annotations

from dataclasses import dataclass

# Changes on fewer than one macroblock in this many are not searched for motion (a caret, a spinner): they go as
# bands, x264 encoding only their rows (`in_bands`). Measured on changed blocks found by the grab's block
# comparison (media/changes.py): a 160 px box moving under a counter at dpr 2 changes about 100 of 16000, and as
# copies it costs 0.118 vCPU against 0.217.
SMALL_CHANGE = 256
# Bands of more than this share of the picture's rows cost about what x264's whole picture does.
BAND_ROWS_SHARE = 0.25
# New blocks a decoder's copy would only blur (an odd shift's chroma: coloured text's edges) cost x264 a few bytes
# of residual each, and us an intra box around them: coloured words scrolled by odd steps, 16-19 such blocks beside
# 350 moved, made pictures of copies of 2-7 kB against x264's 0.4-1.3 kB (2.2 times its bytes in all; tests/media/
# test_moved_pictures.py). x264 sends a moved block of text in well under a byte, so one in this many makes the
# picture x264's.
BLURRED_SHARE = 256
# Copies that went on this many seconds before they had to stop were worth their IDR: the next pause is short again.
SETTLED_S = 2
LONGEST_PAUSE_S = 32


@dataclass
class CopiesRule:
    """One stream's state. Pictures are counted from the stream's first; `fps` turns seconds into pictures."""

    fps: int
    _from: int = 0  # no picture of copies before this one (after copies had to stop)
    _since: int = 0  # the first picture of the copies going on now
    _quick_stops: int = 0  # times in a row copies had to stop soon after they started
    _mostly_new: int = 0  # of the last 8 searches, those that found more new blocks than moved ones (bits)
    _misses: int = 0  # searches in a row that made no picture of copies
    _key_bytes: int = 0  # x264's last IDR: what going back to x264 after copies costs
    _rent: int = 0  # bytes of pictures of copies since then that x264 would have done better
    _renting: bool = False  # the last picture taken is one of those
    _banding: bool = False  # the last picture of ours was of bands alone

    def in_bands(self, *, changed: int, blocks: int, changed_rows: int, rows: int, behind: bool) -> bool:
        """Whether a picture where `changed` of its `blocks` macroblocks changed, in `changed_rows` of its `rows`,
        goes as bands: x264 encodes only those rows, as P pictures of their own while they stay where they are
        (media/inter_band.py), and our slices skip the rest. x264 alone pays its fixed work on every block (a
        32 px spinner at dpr 2: 5 ms a picture, against 0.8 for its band). Then x264 is behind what the decoder
        shows, so bands of many rows go to x264 while it is not. Small changes amid copies (an animation slowing
        down) stay copies: each time copies came between, a band would start again from an IDR of its rows."""
        small = changed * SMALL_CHANGE < blocks
        self._banding = small and (self._banding if behind else changed_rows <= BAND_ROWS_SHARE * rows)
        return self._banding

    def worth_a_search(self, picture: int, *, changed: int, blocks: int, behind: bool) -> bool:
        """Whether to look for motion in this picture: `changed` of its `blocks` macroblocks changed, and x264 is
        `behind` what the decoder shows (copies went out since its last picture: then always)."""
        if behind:
            return True
        # Small changes cost x264 little; looking for motion that is not there costs us, so look less often.
        return not (changed * SMALL_CHANGE < blocks or picture < self._from or (self._misses >= 3 and picture % 8))

    def take(self, *, behind: bool, moved: int, new: int, blocks: int, new_rows: int, rows: int,
             blurred: int = 0) -> bool:
        """Whether a search that found `moved` macroblocks moved and `new` new (of `blocks`; in `new_rows` of the
        picture's `rows`), `blurred` of them moved by an odd shift in luma but not in chroma, goes out as a picture
        of copies."""
        # Much new beside what moved (a box moved by an odd shift: its edges) is cheaper as x264's residual than as
        # intra blocks: as copies a box swinging at dpr 1 took 7 times x264's bytes. Such a picture starts no
        # copies, and while they go on 3 in 8 would stop them, but going back costs an IDR (the whole picture
        # intra): while such pictures cost less together than half of the last IDR (this one estimated by its
        # share of the blocks), they go on as copies, as skis are rented until the rent would buy them. A bar that
        # grew and went back, a box leaving the picture's edge.
        mostly_new = 2 * new > moved or BLURRED_SHARE * blurred > moved
        self._mostly_new = (self._mostly_new << 1 | mostly_new) & 0xFF
        x264_better = mostly_new and (not behind or self._mostly_new.bit_count() >= 3)
        self._renting = x264_better and behind and 2 * (self._rent + self._key_bytes * new / blocks) < self._key_bytes
        if 2 * new_rows > rows or not (moved or behind) or (x264_better and not self._renting):
            self._misses += 1
            return False
        self._misses = 0
        return True

    def wrote(self, picture: int, size: int, *, behind: bool) -> None:
        """A picture of copies `take` allowed went out (x264 was `behind` before it, or not)."""
        if not behind:
            self._since = picture
        if self._renting:
            self._rent += size

    def stopped(self, picture: int) -> None:
        """Copies could not go on at this picture: x264 takes it, as an IDR. Without a pause, each time they came
        back and stopped again would cost one; motion whose shifts are odd as often as not (an animation at dpr 1:
        the page rounds CSS pixels) stops them again and again, so the pause doubles each time they stop within
        `SETTLED_S` of starting, up to `LONGEST_PAUSE_S`."""
        quick = picture - self._since < SETTLED_S * self.fps
        self._quick_stops = min(self._quick_stops + 1, LONGEST_PAUSE_S.bit_length() - 1) if quick else 0
        self._from = picture + self.fps * (1 << self._quick_stops)

    def keyframe(self, size: int) -> None:
        """x264 made an IDR of `size` bytes (x264 is in step with the decoder again)."""
        self._key_bytes, self._rent = size, 0
