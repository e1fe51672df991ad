"""bench.common.peak_rss_mb: a spawned child reports its own peak, not the larger parent's it was forked from
(``ru_maxrss`` keeps the largest image across ``exec``; the memory pairs run each size in such a child)."""

from __future__ import annotations

import sys
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import pytest

from bench.common import peak_rss_mb


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="VmHWM is Linux's")
def test_a_spawned_child_reports_its_own_peak_not_its_parents():
    ballast = bytearray(300 * 1024 * 1024)  # 300 MB touched in this process
    ballast[::4096] = b"\x01" * len(ballast[::4096])
    parent = peak_rss_mb()
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as child:
        own = child.submit(peak_rss_mb).result()
    del ballast
    assert parent > 300
    assert own < parent - 200, (own, parent)
