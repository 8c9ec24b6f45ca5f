"""The picture: the metric against its target, and the replicas of each variant beside the
real ones, with a marker wherever a behavior policy or a stabilization window held the
count back. matplotlib is an optional extra: ``pip install '.[replay]'`` from the checkout
(promhpa is not on the package index)."""

from __future__ import annotations

from pathlib import Path

from .simulate import Outcome


class PlotUnavailableError(RuntimeError):
    """matplotlib (the optional ``replay`` extra) is not installed."""


def plot(variants: dict[str, list[Outcome]], path: Path, title: str) -> list[str]:
    """Draw the replay into ``path`` (PNG or SVG by its suffix); returns the series drawn."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PlotUnavailableError(
            "drawing needs matplotlib: pip install '.[replay]' from promhpa's checkout "
            "(or use --output csv/json)"
        ) from None
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(11, 6.5), height_ratios=(1, 1.3))
    drawn: list[str] = []
    styles = [
        ("tab:blue", "-", 2.6),
        ("tab:orange", "--", 1.6),
        ("tab:green", "-.", 1.4),
        ("tab:purple", ":", 1.4),
    ]
    target = None
    for (name, outcomes), (color, dash, width) in zip(variants.items(), styles, strict=False):
        times = [o.at for o in outcomes]
        top.step(times, [o.load for o in outcomes], where="post", color=color, linestyle=dash,
                 linewidth=width, label=f"{name}: metric")  # fmt: skip
        drawn.append(f"{name}: metric")
        bottom.step(times, [o.replicas for o in outcomes], where="post", color=color, linestyle=dash,
                    linewidth=width, label=f"{name}: replicas")  # fmt: skip
        drawn.append(f"{name}: replicas")
        held = [o for o in outcomes if o.held]
        if held:
            bottom.scatter(
                [o.at for o in held], [o.replicas for o in held], marker="x", color=color, s=18,
                label=f"{name}: held back (policy or window)",
            )  # fmt: skip
            drawn.append(f"{name}: held back")
        target = target or next((o.target for o in outcomes if o.target is not None), None)
    first = next(iter(variants.values()), [])
    if target is not None:
        top.axhline(target, color="tab:red", linestyle="--", linewidth=1, label="target")
        drawn.append("target")
    real = [(o.at, o.real_replicas) for o in first if o.real_replicas is not None]
    if real:
        bottom.step([t for t, _ in real], [r for _, r in real], where="post", color="black",
                    linestyle=":", label="real replicas")  # fmt: skip
        drawn.append("real replicas")
    top.set_ylabel("metric (as the HPA compares it)")
    bottom.set_ylabel("replicas")
    bottom.set_xlabel("time")
    top.set_title(title)
    for ax in (top, bottom):
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper left", fontsize=8)
    fig.autofmt_xdate()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return drawn
