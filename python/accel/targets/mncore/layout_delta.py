"""The change in a layout plan's relayout bytes when some tensors flip scheme, in time
proportional to the tensors' uses.

Why: lpz's coordinate descent (`layouts._descend`) tries flipping each elementwise cluster
and re-evaluated the whole plan per trial (`_Planner.finish`), O(layers) per cluster: a
12-layer GPT-2 spent 5.8 s there against 0.08 s for 2 layers. A trial only changes the
terms of `finish` that read a flipped tensor's scheme: the (layer, input) pairs of that
tensor or of a layer writing it, and the fused-output charge of layers reading or writing
it. `DeltaCost` indexes those terms once and sums their old and new values, with exactly
`finish`'s rules, so the descent takes the same decisions as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any


class DeltaCost:
    """`finish`'s two sums (relayout bytes, fused-output bytes) by term, for one planner
    (`layouts._Planner`; its rules `_demand` and `_tied` passed in, so that this module
    does not import `layouts`, which imports it)."""

    def __init__(self, planner: Any, demand: Callable[..., str | None],
                 tied: Callable[..., bool]) -> None:
        self.p = planner
        g = planner.graph
        self.layers = list(g.layers)
        self.nbytes = {name: v.nbytes for name, v in g.values.items()}
        #: Per (layer, input): (input name, output name, fixed want, demand, tied).
        self.pairs: list[tuple[str, str, str | None, str | None, bool]] = []
        self.pairs_of: dict[str, list[int]] = {}
        self.layers_of: dict[str, list[int]] = {}
        for li, layer in enumerate(self.layers):
            for i, name in enumerate(layer.inputs):
                k = len(self.pairs)
                self.pairs.append((name, layer.output,
                                   planner.fixed_in.get((layer.name, i)),
                                   demand(layer, i, g), tied(layer, i, g)))
                self.pairs_of.setdefault(name, []).append(k)
                self.pairs_of.setdefault(layer.output, []).append(k)
            for name in (layer.output, *layer.inputs):
                self.layers_of.setdefault(name, []).append(li)

    def _layout(self, value: str, scheme: Mapping[str, str]) -> str:
        return self.p.fixed_out.get(value) or self.p.text(value, scheme[value])

    def pair(self, k: int, scheme: Mapping[str, str]) -> int:
        """Bytes of pair k's relayout under `scheme` (0: none), as `finish` decides it."""
        name, output, want, demand, tied = self.pairs[k]
        have = self._layout(name, scheme)
        if want is None:
            if demand is None and tied:
                demand = scheme[output]
            want = have if demand is None else self.p.text(name, demand)
        return self.nbytes[name] if want != have else 0

    def fused(self, li: int, scheme: Mapping[str, str]) -> int:
        """Bytes of layer li's output written in a scheme other than its own (0: none)."""
        layer = self.layers[li]
        if layer.output in self.p.fixed_out or \
                scheme[layer.output] == self.p.out_scheme(layer, scheme):
            return 0
        return self.nbytes[layer.output]

    def totals(self, scheme: Mapping[str, str]) -> tuple[int, int]:
        return (sum(self.pair(k, scheme) for k in range(len(self.pairs))),
                sum(self.fused(li, scheme) for li in range(len(self.layers))))

    def delta(self, old: Mapping[str, str], new: Mapping[str, str], changed: Iterable[str]
              ) -> tuple[int, int]:
        """(relayout bytes, fused bytes) of `new` minus those of `old`, which differ only in
        the schemes of `changed`."""
        pairs: set[int] = set()
        layers: set[int] = set()
        for value in changed:
            pairs.update(self.pairs_of.get(value, ()))
            layers.update(self.layers_of.get(value, ()))
        return (sum(self.pair(k, new) - self.pair(k, old) for k in pairs),
                sum(self.fused(li, new) - self.fused(li, old) for li in layers))
