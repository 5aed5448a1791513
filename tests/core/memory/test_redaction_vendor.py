"""The vendor rule set after our rules (core/memory/redaction/vendor.py, issue 30 part B).

The formats here are ones our own rules do not name, in contexts without a secret word,
so only kingfisher's rules can find them: the tests fail when the second pass is gone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bli_memory.core.memory.redaction import DEFAULT_RULES, Redacted, _apply_rules, redact
from bli_memory.core.memory.redaction.vendor import mask_vendor_secrets, vendor_rules_status
from tests.secret_corpus import HEX, URLSAFE, chars

PULUMI = "pul-" + chars(40, HEX, start=900)
FIGMA = "figd_" + chars(40, URLSAFE, start=901)


def test_a_format_only_the_vendor_rules_know_is_masked_whole_and_once() -> None:
    text = f"works now with {PULUMI} on staging"
    assert _apply_rules(DEFAULT_RULES, text) == (text, 0)  # ours do not know it
    result = redact(text)
    assert result.text == "works now with [REDACTED:pulumi_api_token] on staging"
    assert result.masked == 1
    assert redact(result.text) == Redacted(result.text, 0)


def test_offsets_are_mapped_from_bytes_to_characters() -> None:
    # Multi-byte characters and a lone surrogate before the token shift its byte offsets.
    text = f"é✓\ud800 — {FIGMA} ✓ end"
    assert redact(text).text == "é✓\ud800 — [REDACTED:figma_personal_access_token] ✓ end"


def test_a_rule_that_matches_the_head_of_a_token_masks_the_whole_token() -> None:
    # Flutterwave's encryption-key rule matches FLWSECK_TEST plus 12 characters of a
    # secret key that runs on: the rest of the token must not survive.
    key = "FLWSECK_TEST-" + chars(32, HEX, start=902) + "-X"
    masked = redact(f"I pasted {key} into the page").text
    assert masked == "I pasted [REDACTED:flutterwave_encryption_key] into the page"


def test_a_vendor_token_inside_a_json_string_is_masked() -> None:
    text = json.dumps({"stdout": f"deploy ok\nusing {PULUMI}\n"})
    masked = redact(text).text
    assert PULUMI not in masked and "[REDACTED:pulumi_api_token]" in masked
    assert json.loads(masked)["stdout"].startswith("deploy ok\n")


def test_text_without_a_long_token_run_is_not_scanned() -> None:
    prose = "The staging API listens on port 8443, see docs/deploy.md for the rest."
    assert mask_vendor_secrets(prose) == (prose, 0)


def test_the_rules_are_cached_in_a_private_folder(temp_home: Path) -> None:
    assert vendor_rules_status()["ready"] is True
    folder = Path(os.environ["XDG_CACHE_HOME"]) / "bli-memory" / "secret-rules"
    assert folder.is_dir() and (folder.stat().st_mode & 0o777) == 0o700
    assert any(folder.iterdir())


@pytest.mark.e2e
def test_without_the_package_our_rules_still_run_and_doctor_says_why(tmp_path: Path) -> None:
    code = (
        "import sys, json\n"
        "sys.modules['kingfisher_sdk'] = None\n"  # as on a platform without its wheel
        "from bli_memory.core.memory.redaction import redact\n"
        "from bli_memory.core.memory.redaction.vendor import vendor_rules_status\n"
        f"print(json.dumps([redact({('token ghp_' + chars(36, start=903))!r}).text,\n"
        f"                  redact({('works with ' + PULUMI)!r}).text, vendor_rules_status()]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          check=True)
    ours, vendor_only, status = json.loads(done.stdout)
    assert ours == "token [REDACTED:github_token]"
    assert vendor_only == "works with " + PULUMI  # the second pass is skipped, not fatal
    assert status["ready"] is False and "not installed" in status["error"]


@pytest.mark.e2e
def test_cockpit_doctor_names_the_rule_set_and_its_version() -> None:
    from importlib.metadata import version

    from tests.conftest import bin_path

    done = subprocess.run([bin_path("cockpit"), "doctor", "--json"], capture_output=True, text=True,
                          timeout=120)
    rows = {row["check"]: row for row in json.loads(done.stdout)}
    assert rows["secret rules"]["mark"] == "ok"
    expected = f"kingfisher-secret-scanner {version('kingfisher-secret-scanner')}"
    assert expected in rows["secret rules"]["detail"]


@pytest.mark.parametrize("around", ["Is {}? still valid", "<code>{}</code>", "[{}]", "トークンは{}。",
                                    "({}),", "x {}\u200b end", "`{}`!", "{}|grep"])
def test_a_vendor_token_is_found_whatever_punctuation_or_script_ends_it(around: str) -> None:
    masked = redact(around.format(PULUMI)).text
    assert PULUMI not in masked and masked == around.format("[REDACTED:pulumi_api_token]")


@pytest.mark.parametrize("text", [
    f"curl -u {PULUMI}: https://api.pulumi.com", f"curl -u {PULUMI}", f"curl --user {PULUMI}",
    "curl -u ghp_" + chars(36, start=904) + " https://x",
])
def test_a_token_given_as_a_curl_user_is_masked_once_and_stays_masked(text: str) -> None:
    """A break-it pass: a rule read our own placeholder as user:password on the next call."""
    once = redact(text)
    assert once.masked == 1 and "[REDACTED:[REDACTED" not in once.text
    assert redact(once.text) == Redacted(once.text, 0)


def test_a_word_before_a_hyphen_stays_while_the_token_goes() -> None:
    assert redact(f"staging-env-{PULUMI} ok").text == "staging-env-[REDACTED:pulumi_api_token] ok"
