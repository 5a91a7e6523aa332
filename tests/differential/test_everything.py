"""everything, directly and through the hub."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.differential.everything import EVERYTHING as SPEC
from tests.differential.harness import Bench, cells, compare, open_bench

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
async def bench(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Bench]:
    async with open_bench(SPEC, tmp_path_factory.mktemp(SPEC.name)) as opened:
        yield opened


@pytest.mark.parametrize(("front", "era", "aspect"), cells(SPEC))
async def test_same_answers(bench: Bench, front: str, era: str, aspect: str) -> None:
    await compare(bench, front, era, aspect)
