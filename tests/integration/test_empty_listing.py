"""An empty listing says who it was made for, their groups and the rule that emptied it (issue 28).

The real `hub list` (text and `--json`) against a team's servers.yaml with `default_policy: deny`, as identities
no rule names, and one a named rule denies something; and a real stdio hub whose host's listing the policy left
empty, whose log says the same. Two kitchen children, so tools, prompts, resources and templates are all hidden.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.test_team import POLICIES, team_config, tool_names
from tests.support.logs import wait_for_log
from tests.support.mcp_client import connect_hub, hub_params
from tests.support.paths import REPO
from tests.support.waits import WAIT

pytestmark = pytest.mark.anyio


def hub_list(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hub", "list", "--config", str(config), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=WAIT * 2,
        check=False,
    )


def test_an_empty_hub_list_names_the_identity_its_groups_and_default_policy_deny(tmp_path: Path) -> None:
    config = team_config(tmp_path)
    done = hub_list(config, "--as", "erin", "--group", "sales", "--group", "ops")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].split() == ["TOOL", "SERVER", "DESCRIPTION"]
    assert done.stdout.split("\n\n")[0].strip().count("\n") == 0, "no tool row"
    said = [line for line in done.stderr.splitlines() if line.startswith("hub: ")]
    assert said[0].startswith("hub: nothing listed for erin (groups: ops, sales): the policy hid ")
    for kind in ("tools", "prompts", "resources", "resource templates"):  # every kind the kitchen lists
        assert kind in said[0], said
    assert said[1].startswith("hub:   ") and "by default_policy: deny" in said[1]
    assert "no rule of policies: names erin or one of its groups" in said[1]


def test_hub_list_json_carries_the_identity_and_what_each_rule_hid(tmp_path: Path) -> None:
    no_adds = {"name": "no-adds", "subjects": ["*"], "deny": ["*_add"]}
    config = team_config(tmp_path, [*POLICIES, no_adds])
    erin = json.loads(hub_list(config, "--json", "--as", "erin").stdout)
    assert erin["tools"] == [] and erin["prompts"] == [] and erin["resources"] == []
    assert erin["identity"] == {"name": "erin", "groups": [], "auth": "local"}
    policy = erin["policy"]
    assert (policy["open"], policy["default_policy"], policy["matching_rules"]) == (False, "deny", ["no-adds"])
    by_rule = {entry["rule"]: entry for entry in policy["hidden_by"]}
    assert set(by_rule) == {None, "no-adds"}
    assert by_rule["no-adds"]["tools"] == 2  # icinga_add, postgres_add
    assert policy["hidden"]["tools"] == by_rule[None]["tools"] + 2
    assert policy["hidden"]["prompts"] == by_rule[None]["prompts"] > 0
    # The existing document is unchanged around the new fields.
    assert set(erin) >= {"tools", "resources", "resourceTemplates", "prompts", "servers", "total", "collisions"}

    alice = json.loads(hub_list(config, "--json", "--as", "alice", "--group", "oncall").stdout)
    listed = {t["name"] for t in alice["tools"]}
    assert listed and "icinga_add" not in listed and "icinga_echo" in listed
    assert alice["identity"]["groups"] == ["oncall"]
    assert alice["policy"]["matching_rules"] == ["oncall-reads", "no-adds"]
    assert {e["rule"]: e["tools"] for e in alice["policy"]["hidden_by"]}["no-adds"] == 2

    text = hub_list(config, "--as", "alice", "--group", "oncall")
    said = [line for line in text.stderr.splitlines() if line.startswith("hub: ")]
    assert said[0].startswith("hub: the policy hid ") and said[0].endswith(" from alice (groups: oncall)")
    assert any(line.startswith("hub:   2 tools by rule 'no-adds'") for line in said), said


async def test_a_host_listing_the_policy_left_empty_is_logged_with_who_and_which_rule(tmp_path: Path) -> None:
    config = team_config(tmp_path)
    log = tmp_path / "hub.log"
    async with connect_hub(hub_params(config, log, "--as", "erin", "--group", "sales")) as client:
        assert await tool_names(client) == set()
        line = await wait_for_log(log, "listing_hidden_by_policy", lambda e: e["method"] == "tools/list")
    assert (line["identity"], line["auth"], line["groups"]) == ("erin", "local", ["sales"])
    assert (line["default_policy"], line["matching_rules"]) == ("deny", [])
    assert line["hidden"]["tools"] == sum(line["hidden_by"].values()) > 0
    assert list(line["hidden_by"]) == ["default_policy: deny"]


async def test_hub_health_tells_a_caller_who_the_hub_takes_it_for_and_nothing_of_what_is_hidden(
    tmp_path: Path,
) -> None:
    only_health = {"name": "health-only", "subjects": ["rita"], "allow": ["hub_health"]}
    config = team_config(tmp_path, [*POLICIES, only_health])
    async with connect_hub(hub_params(config, tmp_path / "hub.log", "--as", "rita", "--group", "sales")) as client:
        assert await tool_names(client) == {"hub_health"}
        report = (await client.call_tool("hub_health", {})).structured_content
    assert report is not None
    assert report["caller"] == {
        "identity": "rita",
        "groups": ["sales"],
        "auth": "local",
        "matching_rules": ["health-only"],
    }
    assert report["servers"] == [], "nor of the servers whose names the policy hides from rita"
