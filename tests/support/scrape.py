"""Reading a Prometheus scrape as a test (and the load benchmark) would: samples by name and labels."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    """Every sample of a text exposition, keyed by sample name and its labels."""
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float:
    """One sample's value (0 when the series does not exist yet, as Prometheus reads a missing counter)."""
    return samples.get((name, frozenset(labels.items())), 0.0)


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum over every series of ``name`` whose labels include ``labels``."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= ls)


def quantile(samples: Samples, name: str, q: float, **labels: str) -> float:
    """The ``q`` quantile of histogram ``name`` (its ``_bucket`` series), estimated as ``histogram_quantile`` does."""
    buckets: dict[float, float] = {}
    want = set(labels.items())
    for (n, ls), v in samples.items():
        if n == name + "_bucket" and want <= ls:
            le = float(dict(ls)["le"])
            buckets[le] = buckets.get(le, 0.0) + v
    bounds = sorted(buckets)
    if not bounds or buckets[bounds[-1]] == 0:
        return float("nan")
    rank = q * buckets[bounds[-1]]
    prev_bound, prev_count = 0.0, 0.0
    for b in bounds:
        if buckets[b] >= rank:
            if b == float("inf"):
                return prev_bound
            return prev_bound + (b - prev_bound) * (rank - prev_count) / max(buckets[b] - prev_count, 1e-12)
        prev_bound, prev_count = b, buckets[b]
    return bounds[-1]
