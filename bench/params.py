"""How much each section measures: the full run, and the quick smoke mode (start-up mostly)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Params:
    quick: bool
    tools: int = 10  # realistic tools per child, besides echo, payload and sleep
    seq_calls: int = 1000
    warmup: int = 50
    burst: dict[int, int] = field(default_factory=lambda: {1: 200, 8: 400, 64: 1280})  # in flight -> calls
    burst_rounds: int = 5
    list_reps: int = 200
    list_children: tuple[int, ...] = (1, 5, 20)
    start_children: tuple[int, ...] = (1, 5)
    start_reps: int = 3
    # Children that take a while to start without using the CPU (a backend to reach first): parallel or not.
    parallel_children: int = 20
    parallel_slowest_s: float = 2.0
    parallel_reps: int = 3
    payload_reps: int = 30
    idle_s: float = 5.0

    @classmethod
    def make(cls, quick: bool, tools: int) -> Params:
        if not quick:
            return cls(quick=False, tools=tools)
        return cls(
            quick=True,
            tools=tools,
            seq_calls=100,
            warmup=10,
            burst={1: 20, 8: 40, 64: 64},
            burst_rounds=1,
            list_reps=10,
            list_children=(2,),
            start_children=(2,),
            start_reps=1,
            parallel_children=2,
            parallel_slowest_s=0.3,
            parallel_reps=1,
            payload_reps=3,
            idle_s=0.5,
        )
