"""One verdict on a rule file at all four places rules enter: the adapter's start-up, its
reload of the file, ``check-config`` and the rules webhook (offline, as when Prometheus is
busy or slow). A file refused by one is refused by all; the corpus is the chart's rules as
a migrating user brings them, and that file broken once in each way a rule file can be
(pure: no Prometheus, no cluster)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest

from adapter.admission.check_config import validate
from adapter.server import load_rules
from adapter.serving.reload import RuleReloader
from adapter.serving.rules_webhook import RulesReviewer
from rules.config import ConfigError
from tests.conftest import ROOT

GOOD = (ROOT / "tests" / "adapter" / "data" / "prometheus-community-default-config.yaml").read_text()
FIRST_RULE_OVERRIDE = "      namespace:\n        resource: namespace\n"
MAX_AGE = timedelta(minutes=5)

# name -> the file's text: each broken in one way
CORPUS: dict[str, str] = {
    "prometheus-community chart defaults": GOOD,
    "unknown resource override": GOOD.replace(
        FIRST_RULE_OVERRIDE, "      namespace:\n        resource: namespacez\n", 1
    ),
    "not YAML": GOOD + "\n  - : [\n",
    "unknown key": GOOD.replace("  seriesFilters: []\n", "  seriesFilterz: []\n", 1),
    "a regular expression that does not compile": GOOD.replace(
        "matches: ^container_(.*)_seconds_total$", "matches: ^container_(.*_seconds_total$", 1
    ),
    "a template field that does not exist": GOOD.replace("<<.LabelMatchers>>", "<<.LabelMatcherz>>", 1),
    "name.as names a group the match lacks": GOOD.replace('    as: ""\n', '    as: "$2"\n', 1),
    "a seriesQuery that is not PromQL": GOOD.replace(
        '- seriesQuery: \'{__name__=~"^container_.*"', '- seriesQuery: \'{__name__=~"^container_.*"))', 1
    ),
    "no rules at all": "rules: []\n",
}


def startup(path: Path) -> bool:
    try:
        load_rules(str(path))
    except ConfigError:
        return False
    return True


async def _relist() -> None:
    return None


def reload(path: Path, text: str) -> bool:
    path.write_text("rules: []  # what the adapter served before the edit\n")
    reloader = RuleReloader(str(path), lambda _: None, _relist, lambda _: None, 1.0)
    path.write_text(text)
    return asyncio.run(reloader.check()) == "reloaded"


def check_config(text: str, source: str) -> bool:
    return not asyncio.run(validate(text, source, None, MAX_AGE)).errors


def webhook(text: str, source: str) -> bool:
    reviewer = RulesReviewer(None, MAX_AGE, concurrency=0)  # type: ignore[arg-type]  # offline
    verdict, why = asyncio.run(reviewer._verdict(text, source))
    assert why == "the webhook is busy"
    return not verdict.errors


@pytest.mark.parametrize("name", list(CORPUS))
def test_a_rule_file_gets_one_verdict_at_start_up_reload_check_config_and_the_webhook(
    name: str, tmp_path: Path
) -> None:
    text = CORPUS[name]
    path = tmp_path / "config.yaml"
    path.write_text(text)
    verdicts = {
        "start-up": startup(path),
        "check-config": check_config(text, str(path)),
        "webhook": webhook(text, str(path)),
        "reload": reload(tmp_path / "watched.yaml", text),
    }
    assert len(set(verdicts.values())) == 1, f"{name}: {verdicts}"


def test_the_corpus_holds_files_refused_and_files_accepted() -> None:
    accepted = {name for name, text in CORPUS.items() if check_config(text, name)}
    assert "prometheus-community chart defaults" in accepted
    assert "unknown resource override" not in accepted  # once loaded at start-up anyway
    assert len(accepted) < len(CORPUS) - 5


def test_a_file_refused_at_start_up_names_each_error_on_its_own_line(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(CORPUS["unknown resource override"])
    with pytest.raises(
        ConfigError, match=r"config.yaml:\d+: rules\[0\]\.resources\.overrides\.namespace: unknown"
    ):
        load_rules(str(path))
