"""The Spark UI link is built from configuration, not from the host name Spark guessed
(issue 16 item 9): only the bound port comes from ``sparkContext.uiWebUrl``. No Spark here."""

from __future__ import annotations

import pytest

from spark_workers.runtime.session import public_ui_url

# what Spark reports inside a container: its host name, and the port it bound (4040 was taken)
GUESSED = "http://3f2a9c1b7e0d:4041"


def test_default_uses_configured_host_and_bound_port() -> None:
    assert public_ui_url(GUESSED, host="tdweb.example.com") == "http://tdweb.example.com:4041/"


@pytest.mark.parametrize("wildcard", ["0.0.0.0", "::", ""])
def test_wildcard_listen_address_becomes_loopback(wildcard: str) -> None:
    assert public_ui_url(GUESSED, host=wildcard) == "http://127.0.0.1:4041/"


def test_ipv6_host_gets_brackets() -> None:
    assert public_ui_url("http://[fe80::1]:4040", host="2001:db8::5") == "http://[2001:db8::5]:4040/"


def test_template_replaces_port_and_host() -> None:
    url = public_ui_url(GUESSED, template="https://{host}/spark/{port}/", host="ops.example")
    assert url == "https://ops.example/spark/4041/"


def test_template_without_placeholders_is_used_as_is() -> None:
    assert public_ui_url(GUESSED, template="https://spark.example/", host="x") == "https://spark.example/"


@pytest.mark.parametrize("spark_url", [None, "", "http://host-without-port/", "http://h:notaport/"])
def test_no_ui_or_no_port_gives_no_link(spark_url: str | None) -> None:
    assert public_ui_url(spark_url, host="tdweb.example.com") == ""


def test_guessed_host_never_leaks() -> None:
    for template in ("", "http://{host}:{port}/"):
        assert "3f2a9c1b7e0d" not in public_ui_url(GUESSED, template=template, host="10.0.0.7")
