"""Prints under way, as a page's hook tells them (browser/print_hook.py): pure, no browser. Input waits while a page
prints (Chromium would drop it), and goes in once the last of its prints ends."""

from __future__ import annotations

import asyncio

import pytest

from framestream.browser.print_hook import PagePrints, PrintHook
from framestream.core.errors import ProtocolError
from framestream.core.pages import Page

PAGE = Page("p1", "T1", "S1")
OTHER = Page("p2", "T2", "S2")


async def test_input_to_a_page_that_prints_nothing_goes_in_at_once() -> None:
    prints = PagePrints()
    await asyncio.wait_for(prints.ended(PAGE), 1.0)  # (a page never heard of)
    prints.told("S1", "start")
    prints.told("S1", "end")
    await asyncio.wait_for(prints.ended(PAGE), 1.0)


async def waits_for_every_end(prints: PagePrints, ends: int) -> None:
    """Input to PAGE waits while fewer than `ends` of its prints end, and goes in at the last."""
    waiting = asyncio.create_task(prints.ended(PAGE))
    for _ in range(ends):
        await asyncio.sleep(0)
        assert not waiting.done()
        prints.told("S1", "end")
    await asyncio.wait_for(waiting, 1.0)


async def test_input_waits_for_the_last_of_a_pages_prints_to_end() -> None:
    prints = PagePrints()
    prints.told("S1", "start")  # the page's own
    prints.told("S1", "start")  # and one of its iframes'
    await asyncio.wait_for(prints.ended(OTHER), 1.0)  # another page's input does not wait
    await waits_for_every_end(prints, 2)


async def test_a_print_that_does_not_end_refuses_the_input_with_printing() -> None:
    prints = PagePrints()
    prints.told("S1", "start")
    with pytest.raises(ProtocolError) as refused:
        await prints.ended(PAGE, wait=0.01)
    assert refused.value.code == "printing" and "p1" in str(refused.value)


async def test_an_end_told_without_a_start_does_not_hide_the_next_print() -> None:
    """A page that dispatched the end event itself gains nothing: the count does not go below none."""
    prints = PagePrints()
    prints.told("S1", "end")
    prints.told("S1", "start")
    await waits_for_every_end(prints, 1)


async def test_a_page_closed_or_replaced_mid_print_lets_its_waiting_input_go() -> None:
    prints = PagePrints()
    prints.told("S1", "start")
    waiting = asyncio.create_task(prints.ended(PAGE))
    await asyncio.sleep(0)
    prints.forget("S1")
    await asyncio.wait_for(waiting, 1.0)
    await asyncio.wait_for(prints.ended(PAGE), 1.0)


async def test_the_start_ends_the_wait_of_the_input_that_printed_only_from_its_own_dispatch_on() -> None:
    prints = PagePrints()
    prints.told("S1", "start")
    prints.told("S1", "end")
    started = prints.next_start("S1")
    assert not started.is_set()  # an earlier print does not count
    prints.told("S1", "start")
    assert started.is_set()


def test_the_wrapper_does_not_show_the_event_names_in_its_source() -> None:
    """`window.print.toString()` is the wrapper function's text: the names are held outside it."""
    hook = PrintHook.new()
    script = hook.page_world_script()
    function = script[script.index("window.print = function"):]
    assert hook.started in script and hook.ended in script
    assert hook.started not in function and hook.ended not in function
    assert hook.started != hook.ended and hook.binding not in script
