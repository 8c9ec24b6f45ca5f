"""One verdict on a rule file, wherever rules enter: the adapter at start-up, its reload of
the file, ``check-config`` and the rules webhook.

Each of the four once judged for itself: start-up and reload only parsed the file, so a
rule the webhook refused (an override naming no resource, a lint error) could still load.
Now every path asks ``judge`` first (``load`` for a file: the adapter and ``replay``) and
refuses on any of its errors; ``check-config`` and
the webhook go on to the checks that need a Prometheus (discovery, Prometheus' parser on
each rendered query) or a cluster (``served``: every override against its discovery).
What a path adds is never offline: a file refused by one path offline is refused by all.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from shared import inputfiles
from shared.kube.resources import WELL_KNOWN

from .config import Config, ConfigError, Rule, read_config
from .naming import known
from .rule_lint import lint


@dataclass
class Judgement:
    """The file's parts that could be read, and what is wrong with it."""

    config: Config | None
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # the file could not be read whole (syntax, keys): nothing of it can be served
    invalid_file: bool = False

    def usable(self) -> Config:
        """The config, or ``ConfigError`` naming every error (one per line)."""
        if self.errors or self.config is None:
            raise ConfigError("\n".join(self.errors) or "not a rule file")
        return self.config


def judge(
    text: str, source: str, served: dict[str, set[str]] | None = None, fast_regexps: bool = True
) -> Judgement:
    """Syntax, keys, template fields, regular expressions, resources and lint: every check
    that needs neither a Prometheus nor a cluster (with ``served``, the cluster's resources,
    every override is judged against them instead of the well-known table)."""
    config, problems = read_config(text, source, fast_regexps)
    j = Judgement(config, list(problems), invalid_file=bool(problems) or config is None)
    if config is None:
        return j
    rules = config.rules + config.external_rules
    j.errors += [err for rule in rules for err in resource_errors(source, rule, served)]
    findings = lint(config)
    j.errors += findings.errors
    j.warnings += findings.warnings
    return j


def load(path: str) -> Config:
    """The rule file at ``path`` (``-``: standard input) through the bounded loader, judged:
    ``ConfigError`` naming every error, one per line, on anything ``judge`` refuses."""
    try:
        text = inputfiles.read_text(path)
    except inputfiles.InputError as e:
        raise ConfigError(str(e)) from None
    return judge(text, inputfiles.source_name(path)).usable()


def resource_errors(path: str, rule: Rule, served: dict[str, set[str]] | None) -> list[str]:
    """Overrides that name no resource the API serves (namespacez). Without a cluster the
    well-known table judges, and a resource with a group (a custom resource) is left for
    ``--kubeconfig``; with one, the cluster's discovery judges every override."""
    out = []
    for label, gr in rule.resources.overrides.items():
        if served is None:
            if gr.group or known(gr) is not None:
                continue
            names = sorted(r.plural for r in WELL_KNOWN)
            otherwise = " (give its group for a custom resource)"
            where = ""
        else:
            groups = [gr.group] if gr.group else list(served)
            names = sorted({n for g in groups for n in served.get(g, ())})
            if gr.resource in names:
                continue
            where = f" in group {gr.group!r}" if gr.group else ""
            missing = "API group" if gr.group and gr.group not in served else "resource"
            otherwise = f": the cluster serves no such {missing}"
        spelled, line = rule.resources.written.get(label, (gr.resource, 0))
        hint = difflib.get_close_matches(gr.resource, names, n=1)
        at = f"{path}:{line}" if line else path
        out.append(
            f"{at}: {rule.kind}[{rule.index}].resources.overrides.{label}: unknown resource "
            f"{spelled!r}{where}" + (f" (did you mean {hint[0]!r}?)" if hint else otherwise)
        )
    return out
