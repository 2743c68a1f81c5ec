from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from agent_platform.env import env_bool, env_fernet_keys, env_int, env_list, env_str, redis_url_for_db


@pytest.mark.parametrize(("raw", "expected"), [("1", True), ("TRUE", True), ("on", True), ("0", False), ("no", False)])
def test_booleans_accept_the_usual_spellings(raw, expected):
    assert env_bool("X", not expected, {"X": raw}) is expected


def test_an_unset_or_blank_variable_gives_the_default():
    assert env_bool("X", True, {}) is True
    assert env_str("X", "test", {"X": "  "}) == "test"
    assert env_int("X", 7, {"X": ""}) == 7
    assert env_list("X", ["a"], {}) == ["a"]


@pytest.mark.parametrize(
    ("reader", "raw"),
    [(lambda env: env_bool("X", False, env), "maybe"), (lambda env: env_int("X", 1, env), "ten")],
)
def test_an_unparseable_value_stops_start_up_with_its_name(reader, raw):
    with pytest.raises(ImproperlyConfigured, match=f"X={raw!r}"):
        reader({"X": raw})


def test_an_integer_below_its_minimum_is_refused():
    with pytest.raises(ImproperlyConfigured, match="minimum"):
        env_int("X", 10, {"X": "3"}, minimum=5)


def test_lists_are_split_on_commas_and_trimmed():
    assert env_list("X", [], {"X": " a.example, b.example ,,"}) == ["a.example", "b.example"]


def test_redis_databases_are_swapped_keeping_host_and_credentials():
    assert redis_url_for_db("redis://:pw@cache:6380/5", 1) == "redis://:pw@cache:6380/1"
    with pytest.raises(ImproperlyConfigured):
        redis_url_for_db("http://cache", 0)


def test_secrets_keys_are_fernet_keys_in_order_and_a_bad_one_is_named_by_position_only():
    from cryptography.fernet import Fernet

    first, second = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    assert env_fernet_keys("K", {"K": f"{first}, {second}"}) == (first, second)
    assert env_fernet_keys("K", {}) == ()
    with pytest.raises(ImproperlyConfigured, match="key 2 of 2 is not a Fernet key") as refused:
        env_fernet_keys("K", {"K": f"{first},hunter2-not-a-key"})
    assert "hunter2" not in str(refused.value)


def test_a_choice_is_one_of_its_values_in_any_case_and_defaults_to_the_first():
    from agent_platform.env import env_choice

    assert env_choice("X", ("plain", "json"), {}) == "plain"
    assert env_choice("X", ("plain", "json"), {"X": " JSON "}) == "json"
    with pytest.raises(ImproperlyConfigured, match="X='xml' is not one of plain, json"):
        env_choice("X", ("plain", "json"), {"X": "xml"})
