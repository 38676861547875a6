"""The settings module in fresh processes (tdweb.settings, tdweb.secret_key): the secret key, the
allowed hosts, and the documented production configuration passing ``check --deploy``."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tdweb.secret_key import MIN_LENGTH

ROOT = Path(__file__).resolve().parents[2]
OLD_DEFAULT = "tdweb-embedded-insecure-key-change-me-in-production"
PROBE = (
    "import json, tdweb.settings as s; "
    "print(json.dumps({'key': s.SECRET_KEY, 'hosts': s.ALLOWED_HOSTS, 'hsts': s.SECURE_HSTS_SECONDS, "
    "'proxy': s.SECURE_PROXY_SSL_HEADER, 'ssl_redirect': s.SECURE_SSL_REDIRECT}))"
)


def _clean_env(**extra: str) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("TDWEB_") and k != "DJANGO_SETTINGS_MODULE"
    }
    env.update(extra)
    return env


def _settings(var: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    """Import tdweb.settings in a new interpreter with only ``extra`` TDWEB_* variables set."""
    env = _clean_env(TDWEB_VAR=str(var), **extra)
    return subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def _loaded(result: subprocess.CompletedProcess[str]) -> dict:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "key",
    [OLD_DEFAULT, "change-me-in-production", "x" * (MIN_LENGTH - 1)],
    ids=["old-default", "compose-placeholder", "short"],
)
def test_known_or_short_key_refuses_to_start_without_debug(tmp_path, key) -> None:
    r = _settings(tmp_path / "var", TDWEB_SECRET_KEY=key, TDWEB_DEBUG="0")
    assert r.returncode != 0
    assert "ImproperlyConfigured" in r.stderr and "TDWEB_SECRET_KEY" in r.stderr
    assert not (tmp_path / "var" / "secret_key").exists()


def test_known_key_is_tolerated_in_debug_mode(tmp_path) -> None:
    debug = _settings(tmp_path / "var", TDWEB_SECRET_KEY=OLD_DEFAULT, TDWEB_DEBUG="1")
    assert _loaded(debug)["key"] == OLD_DEFAULT


def test_without_a_key_one_is_generated_once_per_var_folder(tmp_path) -> None:
    first = _loaded(_settings(tmp_path / "a"))["key"]
    path = tmp_path / "a" / "secret_key"
    assert path.read_text().strip() == first and len(first) >= MIN_LENGTH and first != OLD_DEFAULT
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert _loaded(_settings(tmp_path / "a"))["key"] == first  # kept: sessions survive a restart
    assert _loaded(_settings(tmp_path / "b"))["key"] != first  # every installation its own


def test_a_configured_strong_key_is_used_and_nothing_is_written(tmp_path) -> None:
    key = "k" * 20 + "0123456789abcdefghijklmnopqrstuvwxyz!@#$"
    assert _loaded(_settings(tmp_path / "var", TDWEB_SECRET_KEY=key))["key"] == key
    assert not (tmp_path / "var" / "secret_key").exists()


def test_allowed_hosts_default_to_the_machine_without_wildcard(tmp_path) -> None:
    hosts = _loaded(_settings(tmp_path / "var", TDWEB_HOST="10.0.0.5"))["hosts"]
    assert "*" not in hosts and "testserver" not in hosts
    assert {"127.0.0.1", "localhost", "10.0.0.5"} <= set(hosts)
    configured = _settings(tmp_path / "var", TDWEB_ALLOWED_HOSTS="tdweb.example.com,.example.org")
    hosts = _loaded(configured)["hosts"]
    assert hosts == ["tdweb.example.com", ".example.org"]


def test_https_settings_come_from_the_environment(tmp_path) -> None:
    embedded = _loaded(_settings(tmp_path / "var"))
    assert (embedded["hsts"], embedded["proxy"], embedded["ssl_redirect"]) == (0, None, False)
    deployed = _loaded(
        _settings(
            tmp_path / "var",
            TDWEB_SECURE_HSTS_SECONDS="600",
            TDWEB_SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_PROTO,https",
            TDWEB_SECURE_SSL_REDIRECT="1",
        )
    )
    assert (deployed["hsts"], deployed["proxy"], deployed["ssl_redirect"]) == (
        600,
        ["HTTP_X_FORWARDED_PROTO", "https"],
        True,
    )


def test_the_documented_production_configuration_passes_check_deploy(tmp_path) -> None:
    r = subprocess.run(
        [sys.executable, ".ci/check-deploy"],
        cwd=ROOT,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    # and the check has teeth: the embedded defaults fail it
    plain = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=_clean_env(TDWEB_VAR=str(tmp_path / "var"), DJANGO_SETTINGS_MODULE="tdweb.settings"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert plain.returncode != 0 and "security.W004" in plain.stderr + plain.stdout
