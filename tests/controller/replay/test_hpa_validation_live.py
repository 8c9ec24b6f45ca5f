"""The HPA validation table: each invalid spec, refused by the real kube-apiserver and by
``validate_hpa``, with the same messages (field, kind of refusal, value, words).

Each case (``data/invalid_hpas.yaml``) changes one thing in a valid HPA and is sent as
a server-side dry run, so nothing is stored. The control plane is the tests' (Kubernetes
1.37: HPAScaleToZero and HPAConfigurableTolerance on). This is the table promhpa's own
HPA kind is validated by.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from controller.engine.hpa_validation import validate_hpa
from localcluster import Cluster
from shared.kube.client import Kube
from shared.kube.client import load
from shared.kube.errors import KubeError
from tests.controller.replay.hpa_table import BASE
from tests.controller.replay.hpa_table import CASES
from tests.controller.replay.hpa_table import document

pytestmark = pytest.mark.cluster


async def refusals(kube: Kube, docs: list[dict[str, Any]], path: str = "") -> list[list[str]]:
    """What the API server says of each document created at ``path`` (default: built-in HPAs
    in namespace default) as a dry run ([] : accepted)."""
    out = []
    try:
        for doc in docs:
            try:
                await kube.post(path or HPAS, doc, [("dryRun", "All")])
                out.append([])
            except KubeError as e:
                causes = (e.details or {}).get("causes") or []
                out.append([f"{c.get('field')}: {c.get('message')}" for c in causes] or [e.message])
    finally:
        await kube.aclose()
    return out


HPAS = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"


def test_the_valid_spec_is_accepted_by_both(cluster: Cluster) -> None:
    assert asyncio.run(refusals(Kube(load(str(cluster.kubeconfig))), [BASE])) == [[]]
    assert validate_hpa(BASE) == []


def test_every_invalid_spec_is_refused_by_both_in_the_same_words(cluster: Cluster) -> None:
    docs = [document(case) for case in CASES]
    theirs = asyncio.run(refusals(Kube(load(str(cluster.kubeconfig))), docs))
    differ = {
        case["name"]: {"api server": sorted(api), "promhpa": sorted(validate_hpa(doc))}
        for case, doc, api in zip(CASES, docs, theirs, strict=True)
        if sorted(api) != sorted(validate_hpa(doc))
    }
    assert all(theirs), [case["name"] for case, api in zip(CASES, theirs, strict=True) if not api]
    assert len(CASES) >= 40
    assert differ == {}
