"""core/copies.py as a pure policy: when a picture is searched for motion, taken as copies, and how long copies
pause after they had to stop."""

from __future__ import annotations

from framestream.core.copies import BAND_ROWS_SHARE, LONGEST_PAUSE_S, SETTLED_S, SMALL_CHANGE, CopiesRule

FPS = 30
BLOCKS = 16000
ROWS = 100


def take(rule: CopiesRule, *, behind: bool, moved: int, new: int, new_rows: int = 1, blurred: int = 0) -> bool:
    return rule.take(behind=behind, moved=moved, new=new, blocks=BLOCKS, new_rows=new_rows, rows=ROWS,
                     blurred=blurred)


def test_small_changes_are_not_searched_and_searches_that_miss_back_off_until_x264_is_behind() -> None:
    rule = CopiesRule(FPS)
    small = BLOCKS // SMALL_CHANGE - 1
    assert not rule.worth_a_search(10, changed=small, blocks=BLOCKS, behind=False)
    assert rule.worth_a_search(10, changed=small, blocks=BLOCKS, behind=True)
    assert rule.worth_a_search(10, changed=400, blocks=BLOCKS, behind=False)
    for _ in range(3):  # nothing moved: a miss each time
        assert not take(rule, behind=False, moved=0, new=0, new_rows=0)
    searched = [p for p in range(100, 116) if rule.worth_a_search(p, changed=400, blocks=BLOCKS, behind=False)]
    assert searched == [104, 112]  # one picture in 8
    assert take(rule, behind=False, moved=300, new=10)  # motion again: every picture is searched
    assert rule.worth_a_search(113, changed=400, blocks=BLOCKS, behind=False)


def test_much_new_starts_no_copies_and_more_than_half_the_rows_new_goes_to_x264_at_once() -> None:
    rule = CopiesRule(FPS)
    assert not take(rule, behind=False, moved=40, new=30)  # more new than moved: x264's residual does better
    assert take(rule, behind=False, moved=40, new=10)
    # Blocks an odd shift moved but whose chroma a copy would blur: x264's residual does them for a few bytes each.
    assert not take(rule, behind=False, moved=4000, new=20, blurred=20)
    assert take(rule, behind=False, moved=6000, new=20, blurred=20)
    rule.keyframe(100_000)
    assert not take(rule, behind=True, moved=9000, new=10, new_rows=ROWS // 2 + 1)


def test_pictures_x264_does_better_go_on_as_copies_while_they_cost_less_than_half_the_last_idr() -> None:
    rule = CopiesRule(FPS)
    rule.keyframe(12_000)
    assert take(rule, behind=False, moved=60, new=20)
    rule.wrote(1, 200, behind=False)
    taken, written = [], 0
    for picture in range(2, 40):
        ok = take(rule, behind=True, moved=20, new=15)  # a box leaving the edge: more new than moved
        taken.append(ok)
        if not ok:
            break
        rule.wrote(picture, 1500, behind=True)
        written += 1500
    # The first two of a run are taken as any turnaround is; from the third in 8 the rent counts: four pictures of
    # 1.5 kB reach half the 12 kB IDR, and the next is x264's.
    assert taken == [True] * 6 + [False] and written == 6 * 1500
    rule.keyframe(12_000)  # x264 in step again: the rent starts over
    assert take(rule, behind=True, moved=20, new=15)


def test_a_stop_soon_after_starting_doubles_the_pause_up_to_the_longest_and_a_settled_run_resets_it() -> None:
    rule = CopiesRule(FPS)
    pauses = []
    picture = 0
    for _ in range(8):
        rule.wrote(picture, 100, behind=False)  # copies start
        picture += 5  # and stop soon
        rule.stopped(picture)
        first = next(p for p in range(picture, picture + 100 * FPS)
                     if rule.worth_a_search(p, changed=400, blocks=BLOCKS, behind=False))
        pauses.append((first - picture) / FPS)
        picture = first
    assert pauses == [2, 4, 8, 16, 32, 32, 32, 32]
    assert max(pauses) == LONGEST_PAUSE_S
    rule.wrote(picture, 100, behind=False)
    picture += SETTLED_S * FPS  # they went on long enough to be worth their IDR
    rule.stopped(picture)
    assert rule.worth_a_search(picture + FPS, changed=400, blocks=BLOCKS, behind=False)
    assert not rule.worth_a_search(picture + FPS - 1, changed=400, blocks=BLOCKS, behind=False)


def test_small_changes_go_as_bands_in_few_rows_and_after_bands_but_not_amid_copies() -> None:
    rule = CopiesRule(30)
    blocks, rows = 16000, 100
    small = blocks // SMALL_CHANGE - 1
    # x264 in step: a spinner's few rows go as bands; small changes over many rows (a long caret) to x264.
    assert rule.in_bands(changed=small, blocks=blocks, changed_rows=8, rows=rows, behind=False)
    assert not rule.in_bands(changed=small, blocks=blocks, changed_rows=int(BAND_ROWS_SHARE * rows) + 1, rows=rows,
                             behind=False)
    # x264 behind the bands: small changes go on as bands, however many rows (x264 would need an IDR).
    assert rule.in_bands(changed=small, blocks=blocks, changed_rows=8, rows=rows, behind=False)
    assert rule.in_bands(changed=small, blocks=blocks, changed_rows=60, rows=rows, behind=True)
    # A larger change ends the bands (copies or x264 take it); small changes behind copies stay copies.
    assert not rule.in_bands(changed=small + 2, blocks=blocks, changed_rows=8, rows=rows, behind=True)
    assert not rule.in_bands(changed=small, blocks=blocks, changed_rows=8, rows=rows, behind=True)
    # Once x264 is in step again (an IDR), small changes go as bands again.
    assert rule.in_bands(changed=small, blocks=blocks, changed_rows=8, rows=rows, behind=False)
