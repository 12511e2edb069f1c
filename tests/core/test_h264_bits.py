"""core/h264_bits.py: Exp-Golomb codes, emulation prevention and the RBSP stop bit, as properties over random input."""

from __future__ import annotations

import random
import re

import pytest

from framestream.core.h264_bits import BitReader, BitWriter, H264SyntaxError, escape, unescape


@pytest.mark.parametrize("seed", range(5))
def test_what_the_writer_writes_the_reader_reads_back(seed: int) -> None:
    rng = random.Random(seed)
    values: list[tuple[str, int, int]] = []
    w = BitWriter()
    for _ in range(400):
        kind = rng.choice("use")
        if kind == "u":
            bits = rng.randint(1, 20)
            value = rng.getrandbits(bits)
            w.u(bits, value)
            values.append(("u", bits, value))
        elif kind == "e":
            value = rng.choice([0, 1, 2, rng.randint(0, 70000)])
            w.ue(value)
            values.append(("ue", 0, value))
        else:
            value = rng.randint(-5000, 5000)
            w.se(value)
            values.append(("se", 0, value))
    r = BitReader(w.rbsp())
    for kind, bits, value in values:
        assert (r.u(bits) if kind == "u" else r.ue() if kind == "ue" else r.se()) == value
    rest, count = r.rest()
    assert (rest, count) == (0, 0)  # only the stop bit and its zero alignment were left


def test_exp_golomb_codes_are_the_standards() -> None:
    # H.264 table 9-2 and 9-3: ue 0 -> 1, 1 -> 010, 2 -> 011, 3 -> 00100; se 1 -> 010, -1 -> 011, 2 -> 00100.
    def coded(write: str, value: int) -> str:
        w = BitWriter()
        getattr(w, write)(value)
        return format(w.value, f"0{w.count}b")

    assert [coded("ue", v) for v in (0, 1, 2, 3)] == ["1", "010", "011", "00100"]
    assert [coded("se", v) for v in (0, 1, -1, 2)] == ["1", "010", "011", "00100"]


@pytest.mark.parametrize("seed", range(10))
def test_escaping_hides_every_start_code_and_unescaping_undoes_it(seed: int) -> None:
    rng = random.Random(seed)
    rbsp = bytes(rng.choice([0, 0, 0, 1, 2, 3, rng.randint(0, 255)]) for _ in range(rng.randint(1, 3000)))
    rbsp += b"\x80"  # an RBSP ends with its stop bit
    payload = escape(rbsp)
    assert re.search(b"\x00\x00[\x00-\x02]", payload) is None
    assert re.search(b"\x00\x00\x03(?![\x00-\x03])", payload[:-1]) is None  # every 00 00 03 is an escape
    assert unescape(payload) == rbsp


def test_the_rest_stops_at_the_stop_bit_and_a_unit_without_one_is_refused() -> None:
    r = BitReader(bytes([0b10110000]))  # 1, then 01 before the stop bit 1
    assert r.u(1) == 1
    assert r.rest() == (0b01, 2)
    with pytest.raises(H264SyntaxError):
        BitReader(b"\x00\x00").rest()
    with pytest.raises(H264SyntaxError):
        BitReader(b"\x01").u(9)
