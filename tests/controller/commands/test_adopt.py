"""adopt and release on plain data: what the new object carries over, and what it drops."""

from __future__ import annotations

from typing import Any

from controller.cli import main
from controller.commands.adopt import ADOPT
from controller.commands.adopt import RELEASE
from controller.commands.adopt import carried_status
from controller.commands.adopt import moved


def builtin(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "shop", "uid": "u1", "resourceVersion": "9", "generation": 4,
                     "labels": {"team": "a"},
                     "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "note": "x"}},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "maxReplicas": 5, **spec},
    }  # fmt: skip


def test_adopting_keeps_the_spec_labels_and_annotations_and_changes_only_the_kind() -> None:
    new, dropped = moved(builtin(minReplicas=2), ADOPT)
    assert new["apiVersion"] == "autoscaling.promhpa.io/v2"
    assert new["spec"] == builtin(minReplicas=2)["spec"]
    assert new["metadata"] == {"name": "web", "namespace": "shop", "labels": {"team": "a"},
                               "annotations": {"note": "x"}}  # fmt: skip
    assert dropped == []


def test_releasing_drops_the_knobs_the_builtin_kind_has_not_and_names_them() -> None:
    ours = {
        **builtin(controller={"syncPeriod": "5s", "paused": True}),
        "apiVersion": "autoscaling.promhpa.io/v2",
    }
    new, dropped = moved(ours, RELEASE)
    assert (new["apiVersion"], "controller" in new["spec"]) == ("autoscaling/v2", False)
    assert dropped == ["spec.controller.syncPeriod", "spec.controller.paused"]


def test_the_status_carries_over_with_last_scale_time_but_not_the_old_generation() -> None:
    status = {"observedGeneration": 4, "lastScaleTime": "2026-11-29T10:00:00Z", "currentReplicas": 3,
              "desiredReplicas": 3, "conditions": [{"type": "AbleToScale", "status": "True",
                                                    "observedGeneration": 4}]}  # fmt: skip
    assert carried_status(status) == {"lastScaleTime": "2026-11-29T10:00:00Z", "currentReplicas": 3,
                                      "desiredReplicas": 3,
                                      "conditions": [{"type": "AbleToScale", "status": "True"}]}  # fmt: skip


def test_all_needs_a_namespace(capsys: Any) -> None:
    assert main(["adopt", "--all"]) == 2
    assert "-n" in capsys.readouterr().err


def test_a_name_without_a_namespace_is_refused(capsys: Any) -> None:
    assert main(["release", "web"]) == 2
    assert "NAMESPACE/NAME" in capsys.readouterr().err
