"""The registry behind AmbiguousSelector: which HPAs' selectors claim a set of pods."""

from __future__ import annotations

from typing import Any

from controller.live.hpa_selectors import SelectorRegistry
from shared.selectors import parse


def pod(**labels: str) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns", "labels": labels}}


def registry(**selectors: str) -> SelectorRegistry:
    r = SelectorRegistry()
    for name, text in selectors.items():
        r.put(("ns", name), parse(text))
    return r


def test_every_selector_matching_one_of_the_pods_is_reported_sorted() -> None:
    r = registry(web="app=web", canary="app in (web,canary)", other="app=api", track="track")
    assert r.selecting("ns", [pod(app="web")]) == ["ns/canary", "ns/web"]
    assert r.selecting("ns", [pod(app="api", track="x")]) == ["ns/other", "ns/track"]


def test_selectors_without_equality_requirements_are_still_tested() -> None:
    r = registry(not_api="app notin (api)", anything="tier!=db")
    assert r.selecting("ns", [pod(app="web")]) == ["ns/anything", "ns/not_api"]
    assert r.selecting("ns", [pod(app="api", tier="db")]) == []


def test_other_namespaces_never_claim_the_pods() -> None:
    r = registry(web="app=web")
    r.put(("elsewhere", "web"), parse("app=web"))
    assert r.selecting("ns", [pod(app="web")]) == ["ns/web"]


def test_updated_and_removed_selectors_stop_claiming() -> None:
    r = registry(web="app=web", twin="app=web")
    r.put(("ns", "twin"), parse("app=twin"))
    assert r.selecting("ns", [pod(app="web")]) == ["ns/web"]
    r.remove(("ns", "web"))
    assert r.selecting("ns", [pod(app="web")]) == []
    assert r.selecting("ns", []) == []
