"""A scroll's new rows as P pictures of their band (media/inter_band.py, media/moved_pictures.py): decoded in the
stream by a real decoder, the band's rows are bit for bit what the band's own decoder made of its pictures (so what
its encoder predicted from is what the decoder shows: no drift), at a fraction of intra bands' bytes; a picture
whose vectors read outside its band goes as an IDR. `reads_outside` itself is checked on records built here."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import av
import cv2
import numpy as np
import pytest

from framestream.core.copies import CopiesRule
from framestream.core.h264 import NAL_SLICE, nal_type, split_annexb
from framestream.core.h264_bits import SLICE_P, parse_foreign_slice
from framestream.media import inter_band
from framestream.media.encoder import EncodedPicture, EncoderSettings, _band_encoder, _i420_planes
from framestream.media.inter_band import InterBand, reads_outside
from framestream.media.motion import Motion
from framestream.media.moved_pictures import Segment, _i420_box, plan
from tests.media.test_moved_pictures import H, Run, W, explode, ours, psnr, text_page

_RECORD = [("w", "u1"), ("h", "u1"), ("dst_y", "i2"), ("motion_y", "i4"), ("motion_scale", "u2")]


def vectors(*blocks: tuple[int, int, int]) -> np.ndarray:
    """AVMotionVector-like records of 16-wide blocks: (height, top row, vertical vector in quarter samples)."""
    return np.array([(16, tall, top + tall // 2, mv, 4) for tall, top, mv in blocks], _RECORD)


def test_a_vector_reads_outside_only_past_an_edge_with_content_beyond_it() -> None:
    # A 32-row band. Whole samples read exactly the block: up to the edges and no further.
    assert not reads_outside(vectors((16, 0, 0), (16, 16, 0)), 32, above=True, below=True)
    assert reads_outside(vectors((16, 16, 4)), 32, above=False, below=True)  # one row past the bottom
    assert not reads_outside(vectors((16, 16, 4)), 32, above=True, below=False)  # the picture's bottom: padded alike
    assert reads_outside(vectors((16, 0, -4)), 32, above=True, below=False)
    assert not reads_outside(vectors((16, 0, -24)), 32, above=False, below=True)  # the picture's top
    # A fraction's filter reads 2 rows above and 3 below the block.
    assert not reads_outside(vectors((16, 0, 9)), 32, above=True, below=True)  # 2.25 down: reads from row 0
    assert reads_outside(vectors((16, 0, 7)), 32, above=True, below=False)  # 1.75 down: from row -1
    assert not reads_outside(vectors((16, 16, -9)), 32, above=True, below=True)  # 2.25 up: to row 31
    assert reads_outside(vectors((16, 16, -7)), 32, above=False, below=True)  # 1.75 up: to row 32
    # An odd whole-sample vector is half a chroma sample, whose bilinear filter reads one chroma row more: still
    # inside when luma is (15 rows down reads luma rows 15-30, chroma 7-15 of 16).
    assert not reads_outside(vectors((16, 0, 60)), 32, above=True, below=True)
    assert reads_outside(vectors((8, 24, 4)), 32, above=True, below=True)
    # Scaled otherwise than in quarters (libavcodec says its scale): the same reads.
    half = np.array([(16, 16, 24, 2, 2)], _RECORD)  # one sample down, in halves
    assert reads_outside(half, 32, above=False, below=True)
    assert not reads_outside(np.zeros(0, _RECORD), 32, above=True, below=True)  # intra only


class Bands:
    """What each band encoder returned, decoded apart by a decoder of its own: picture number -> [(rows, Y)]."""

    def __init__(self, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
        self.by_picture: dict[int, list[tuple[tuple[int, int], np.ndarray]]] = {}
        self.keyframes: dict[int, list[bool]] = {}  # picture number -> whether each of its bands was an IDR
        decoders: dict[int, av.CodecContext] = {}
        encode = InterBand.encode

        def recorded(band: InterBand, i420: np.ndarray, qp: int, *, rows: tuple[int, int], picture_rows: int,
                     inter: bool, idr_qp: int | None = None) -> tuple[bytes, bool]:
            data, key = encode(band, i420, qp, rows=rows, picture_rows=picture_rows, inter=inter, idr_qp=idr_qp)
            decoder = decoders.setdefault(id(band), av.CodecContext.create("h264", "r"))
            frames = decoder.decode(av.Packet(data))
            assert len(frames) == 1
            self.by_picture.setdefault(len(run.pictures), []).append((rows, frames[0].to_ndarray(format="yuv420p")))
            self.keyframes.setdefault(len(run.pictures), []).append(key)
            return data, key

        monkeypatch.setattr(InterBand, "encode", recorded)

    def check_decoded_alike(self, run: Run) -> None:
        """Every band's rows in the stream's decoded picture are exactly its own decoder's picture."""
        assert self.by_picture
        for index, bands in self.by_picture.items():
            for (top, bottom), own in bands:
                luma = run.decoded[index][: run.encoder.height][top * 16 : bottom * 16]
                assert np.array_equal(luma, own[: (bottom - top) * 16]), f"picture {index}: rows {top}-{bottom} differ"


def band_p_slices(run: Run, picture: EncodedPicture) -> int:
    """Placed P slices of a band in a picture: P slices filtered inside themselves (ours are not filtered)."""
    moved = run.encoder._moved
    assert moved is not None and moved._headers is not None
    sps, pps = moved._headers
    return sum(1 for unit in split_annexb(picture.data) if nal_type(unit) == NAL_SLICE and
               (s := parse_foreign_slice(unit, sps, pps)).kind == SLICE_P and s.deblocking_idc == 2)


@contextmanager
def scrolled(monkeypatch: pytest.MonkeyPatch, steps: list[int], keyframes: tuple[int, ...] = (), *,
             header: int = 0) -> Iterator[tuple[Run, Bands]]:
    """A text page scrolled by `steps`, the pictures after the steps numbered in `keyframes` sent as IDRs; under a
    `header` of that many rows that stays (a site's sticky bar) holding a counter of the pictures."""
    tall = text_page()
    run = Run()
    bands = Bands(run, monkeypatch)

    def view(y: int, number: int) -> np.ndarray:
        page = np.ascontiguousarray(tall[y : y + H])
        if header:
            page[:header] = (90, 50, 20, 255)
            cv2.putText(page, f"picture {number}", (8, 18), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (255, 255, 255, 255), 1,
                        cv2.LINE_AA)
        return page

    try:
        y = 0
        run.send(view(y, 0))
        for index, step in enumerate(steps):
            y += step
            run.send(view(y, index + 1), keyframe=index in keyframes)
        yield run, bands
    finally:
        run.close()


def test_a_steady_scroll_s_new_rows_go_as_p_pictures_of_their_band_decoded_exactly_as_encoded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    steps = [6] * 40 + [-6] * 20
    with monkeypatch.context() as patch, scrolled(patch, steps) as (run, bands):
        assert all(ours(p) for p in run.pictures[2:])
        inter = [band_p_slices(run, p) > 0 for p in run.pictures]
        # The first band of each direction is an IDR; then P pictures (a reversal moves the band to the top).
        assert inter.count(True) >= len(steps) - 4, inter
        bands.check_decoded_alike(run)
        quality = [psnr(d, s) for d, s in zip(run.decoded, run.sources, strict=True)]
        assert min(quality) >= 38, quality
        assert explode(run.stream, tmp_path) == len(run.pictures)
        p_band_bytes = sum(len(p.data) for p in run.pictures[2:])
    with monkeypatch.context() as patch:  # the same scroll with every band an IDR, as before P bands
        patch.setattr(inter_band, "reads_outside", lambda *args, **kwargs: True)
        with scrolled(patch, steps) as (run, bands):
            assert not any(band_p_slices(run, p) for p in run.pictures)  # nothing reads outside unchecked
            bands.check_decoded_alike(run)
            assert min(psnr(d, s) for d, s in zip(run.decoded, run.sources, strict=True)) >= 38
            intra_band_bytes = sum(len(p.data) for p in run.pictures[2:])
    # 59.4 against 153.6 kB when written, for 60 pictures.
    assert p_band_bytes < 0.6 * intra_band_bytes, (p_band_bytes, intra_band_bytes)


def test_after_an_idr_from_x264_a_band_starts_again_from_an_idr_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """x264's IDR replaces what the decoder shows in the band's rows, so the band's encoder no longer predicts
    from it: its next picture must be an IDR (a P picture would decode from x264's rows as from its own)."""
    steps = [6] * 30
    with scrolled(monkeypatch, steps, keyframes=(10, 20)) as (run, bands):
        assert [i for i, p in enumerate(run.pictures) if p.keyframe] == [0, 11, 21]
        bands.check_decoded_alike(run)
        inter = [band_p_slices(run, p) > 0 for p in run.pictures]
        assert inter.count(True) >= len(steps) - 10, inter
        assert min(psnr(d, s) for d, s in zip(run.decoded, run.sources, strict=True)) >= 38


@pytest.mark.parametrize("header", [32, 24])
def test_a_sticky_header_s_counter_and_a_scroll_s_new_rows_go_on_as_two_bands(
        header: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """New rows at the top (a header's counter) and at the bottom (the scroll) each picture: a band each, each the
    P picture of its own encoder (two bands of one encoder could not both be). x264 sometimes codes the counter
    from the header's flat colour below the band, which the check sends back to an IDR. A header that ends inside a
    row of blocks leaves that row half header, half text that scrolled up from below the band: the top band goes as
    an IDR each time, the bottom one as P."""
    steps = [6] * 30
    with scrolled(monkeypatch, steps, header=header) as (run, bands):
        assert all(ours(p) for p in run.pictures[2:])
        assert all(len(bands.by_picture.get(i, [])) == 2 for i in range(2, len(run.pictures)))
        bands.check_decoded_alike(run)
        inter = [band_p_slices(run, p) for p in run.pictures]
        if header % 16 == 0:
            assert inter.count(2) >= 10, inter  # 18 when written
        assert sum(1 for count in inter if count >= 1) >= len(steps) - 3, inter
        assert min(psnr(d, s) for d, s in zip(run.decoded, run.sources, strict=True)) >= 38
        assert explode(run.stream, tmp_path) == len(run.pictures)


def test_a_p_picture_whose_vectors_read_outside_or_cannot_be_read_goes_as_an_idr() -> None:
    """Text moved up 6 rows in a 2-row band: at the picture's bottom its vectors read below it, into the padding
    the decoder has too (a P picture); with the picture going on below, outside (an IDR). Without exported vectors
    (a decoder not asked for them) a P picture is never taken unchecked."""
    width, height = W, 32
    planes = _i420_planes(cv2.cvtColor(text_page(), cv2.COLOR_BGRA2YUV_I420), W, 3 * H)

    def band_at(y: int) -> np.ndarray:
        return _i420_box(planes, y, y + height, 0, width)

    for export, rows, want_keyframe in ((True, (22, 24), False), (True, (0, 2), True), (False, (22, 24), True)):
        band = InterBand(_band_encoder(EncoderSettings(), width, height, width // 16 * height // 16, True))
        try:
            if not export:
                band._decoder = av.CodecContext.create("h264", "r")
            assert band.encode(band_at(100), 26, rows=rows, picture_rows=24, inter=False)[1]
            _, keyframe = band.encode(band_at(106), 26, rows=rows, picture_rows=24, inter=True)
            assert keyframe == want_keyframe, (export, rows)
        finally:
            band.close()


def motion_of(rows: int, columns: int, new: list[tuple[int, int]], moved: Sequence[tuple[int, int, int]] = ()
              ) -> Motion:
    """A Motion with these new blocks (row, column) and moved ones (row, column, shift down in pixels)."""
    vectors = np.zeros((rows, columns, 2), np.int32)
    flags = np.zeros((rows, columns), bool)
    for row, column in new:
        flags[row, column] = True
    for row, column, down in moved:
        vectors[row, column] = (0, down)
    return Motion(vectors, flags)


def test_plan_keeps_a_band_while_its_new_rows_stay_inside_and_lets_one_rest_while_its_rows_are_still() -> None:
    rows, columns = 20, 8
    # A spinner's band from the last picture: new blocks inside it again go on as its P picture.
    segments, resting = plan(motion_of(rows, columns, [(9, 3)]), {(8, 11)})
    assert segments == [Segment((8, 11), inter=True)] and resting == set()
    # Nothing changed in its rows: it rests (the decoder still shows its encoder's picture), and stays carried.
    segments, resting = plan(motion_of(rows, columns, [(2, 3)]), {(8, 11)}, bands=True)
    assert segments == [Segment((1, 4))] and resting == {(8, 11)}
    # New rows that reach past it: a band of its own rows, from an IDR (the old one is written over).
    segments, resting = plan(motion_of(rows, columns, [(9, 3), (10, 3), (11, 3)]), {(8, 11)}, bands=True)
    assert segments == [Segment((8, 13))] and resting == set()
    # Only moved in its rows (copies over it): neither kept nor resting.
    segments, resting = plan(motion_of(rows, columns, [], [(9, 3, 4)]), {(8, 11)})
    assert segments == [] and resting == set()
    # Without `bands`, new blocks in the middle are a box; at the picture's bottom a band, with the row above it
    # whose content came up from within the band, not the one whose content came down from beyond.
    segments, _ = plan(motion_of(rows, columns, [(5, 2), (19, 6)], [(18, c, -6) for c in range(columns)]), set())
    assert segments == [Segment((5, 6), (0, 4)), Segment((18, 20))]
    segments, _ = plan(motion_of(rows, columns, [(19, 6)], [(18, c, 6) for c in range(columns)]), set())
    assert segments == [Segment((19, 20))]
    # A new band's rows beside its new ones stop at a kept band and at the rows before.
    segments, _ = plan(motion_of(rows, columns, [(9, 3), (12, 1)]), {(8, 11)}, bands=True)
    assert segments == [Segment((8, 11), inter=True), Segment((11, 14))]


def wide_text_page() -> np.ndarray:
    """1280x768 of text, where a change of up to 14 blocks is small."""
    return np.ascontiguousarray(np.hstack([text_page()[: 2 * H]] * 2))


def test_a_spinner_on_a_text_page_goes_as_p_pictures_of_its_rows_alone(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A small change (a 32 px spinner) is encoded by x264 in its rows only, as P pictures of their band: x264
    alone analysed the whole picture for it. Every picture decodes to its source, and the stream costs no more
    than x264 alone's. At 1280x768, where a change of up to 14 blocks is small."""
    page = wide_text_page()

    def spinner(step: int) -> np.ndarray:
        picture = page.copy()
        cv2.circle(picture, (400, 200), 14, (220, 220, 220, 255), 4)
        cv2.ellipse(picture, (400, 200), (14, 14), 0, 30 * step, 30 * step + 90, (190, 100, 20, 255), 4)
        return picture

    def run_spinner(patch: pytest.MonkeyPatch) -> tuple[Run, Bands]:
        run = Run(size=(2 * W, 2 * H))
        bands = Bands(run, patch)
        for step in range(40):
            run.send(spinner(step))
        run.close()
        return run, bands

    with monkeypatch.context() as patch:
        run, bands = run_spinner(patch)
    assert all(ours(p) for p in run.pictures[1:])
    # The first band is an IDR, and the one from row 10; 37 of 40 pictures were P when written.
    assert sum(1 for p in run.pictures if band_p_slices(run, p)) >= 34
    # The spinner's rows (11-13 of 48) and one beside them each way: once its arc reached row 11, a band from row 10.
    assert {rows for each in bands.by_picture.values() for rows, _ in each} == {(11, 15), (10, 15)}
    bands.check_decoded_alike(run)
    assert min(psnr(d, s) for d, s in zip(run.decoded, run.sources, strict=True)) >= 40
    assert explode(run.stream, tmp_path) == len(run.pictures)
    band_bytes = sum(len(p.data) for p in run.pictures[1:])
    with monkeypatch.context() as patch:
        patch.setattr(CopiesRule, "in_bands", lambda *args, **kwargs: False)
        alone, _ = run_spinner(patch)
    assert not any(ours(p) for p in alone.pictures)
    x264_bytes = sum(len(p.data) for p in alone.pictures[1:])
    # 55.4 against 67.6 kB (46.0 with band IDRs at the moving quality, which blurred the rows beside the spinner).
    assert band_bytes <= 1.0 * x264_bytes, (band_bytes, x264_bytes)


def test_letters_typed_go_as_their_bands_and_the_refinement_sharpens_only_them_as_p_pictures(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Letters typed into a line are small changes: P pictures of their band, and at rest the refinement is a P
    picture of the same band at the still quality. Before, all of a band's blocks counted as shown lossy, so each
    refinement encoded its whole rows anew as intra boxes (benchmarks.patches' typing at dpr 2: 361 against 22.8
    kbit/s). Every picture decodes to its source (each refinement 2 dB sharper in the field), and once the band is
    going the stream costs no more than x264 alone's."""
    page = wide_text_page()
    page[300:360, 40:900] = 255  # a text field

    def typed(letters: int) -> np.ndarray:
        picture = page.copy()
        cv2.putText(picture, "the quick brown fox jumps"[:letters], (50, 340), cv2.FONT_HERSHEY_SIMPLEX, 1.0,
                    (20, 20, 20, 255), 2, cv2.LINE_AA)
        return picture

    def run_typing(patch: pytest.MonkeyPatch) -> tuple[Run, Bands, list[EncodedPicture]]:
        run = Run(size=(2 * W, 2 * H))
        bands = Bands(run, patch)
        run.send(typed(0))
        run.send(typed(0), refinement=True)
        refinements = []
        for letters in range(1, 25):
            run.send(typed(letters))
            if letters % 6 == 0:  # a pause: the policy's refinement
                refinements.append(run.send(typed(letters), refinement=True))
        run.close()
        return run, bands, refinements

    with monkeypatch.context() as patch:
        run, bands, refinements = run_typing(patch)
    assert all(ours(p) for p in run.pictures[2:]) and not any(p.keyframe for p in run.pictures[2:])
    numbers = [index for index, picture in enumerate(run.pictures) if any(picture is r for r in refinements)]
    # The refinements are P pictures of the letters' band (at the still quality x264 turns its filter off, so
    # their slices do not tell `band_p_slices`).
    assert all(bands.keyframes[index] == [False] for index in numbers), [bands.keyframes[i] for i in numbers]
    bands.check_decoded_alike(run)
    field = (slice(300, 360), slice(40, 900))
    for index in numbers:
        assert psnr(run.decoded[index][field], run.sources[index][field]) >= \
                psnr(run.decoded[index - 1][field], run.sources[index - 1][field]) + 2
    # The page's text beside the field, in the band's rows, stays as sharp as refined: its band's IDR is at the
    # still quality (at the moving one it fell from 54.1 to 41.4 dB until the next refinement).
    def beside(picture: np.ndarray) -> np.ndarray:
        return np.vstack([picture[288:300], picture[360:368]])

    sharp = psnr(beside(run.decoded[1]), beside(run.sources[1]))
    assert all(psnr(beside(d), beside(s)) >= sharp - 1 for d, s in zip(run.decoded[2:], run.sources[2:], strict=True))
    assert explode(run.stream, tmp_path) == len(run.pictures)
    with monkeypatch.context() as patch:
        patch.setattr(CopiesRule, "in_bands", lambda *args, **kwargs: False)
        alone, _, _ = run_typing(patch)
    assert not any(ours(p) for p in alone.pictures)
    ours_bytes = sum(len(p.data) for p in run.pictures[numbers[0] + 1 :])
    x264_bytes = sum(len(p.data) for p in alone.pictures[numbers[0] + 1 :])
    # Once the band is going: 5.3 against 6.9 kB when written. Its start costs more: its IDR of whole rows of
    # dense text, 9.9 kB against x264's P picture of the first letter (16.7 against 12.3 kB in all).
    assert ours_bytes <= x264_bytes, (ours_bytes, x264_bytes)
