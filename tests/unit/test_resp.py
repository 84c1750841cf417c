"""The fleet pipe's commands, byte for byte as RESP writes them (an array of bulk strings, each
prefixed by its length in bytes)."""

from __future__ import annotations

from gateway.fleet.pipe import command


def test_a_command_is_an_array_of_bulk_strings() -> None:
    assert command("EVALSHA", b"ab", 1) == b"*3\r\n$7\r\nEVALSHA\r\n$2\r\nab\r\n$1\r\n1\r\n"


def test_text_is_utf_8_and_its_length_counts_bytes_not_characters() -> None:
    assert command(b"AUTH", "contraseña") == b"*2\r\n$4\r\nAUTH\r\n$11\r\ncontrase\xc3\xb1a\r\n"


def test_an_empty_argument_is_a_bulk_string_of_length_zero() -> None:
    # The gate's script reads "" as "no revision to check" (gateway.fleet.gate).
    assert command(b"EVALSHA", "") == b"*2\r\n$7\r\nEVALSHA\r\n$0\r\n\r\n"


def test_integers_are_written_in_decimal_whatever_their_size() -> None:
    instant_us, negative, large = 1_764_400_000_000_000, -5, 2**70
    assert command(instant_us, negative, large) == (
        b"*3\r\n$16\r\n1764400000000000\r\n$2\r\n-5\r\n$22\r\n1180591620717411303424\r\n"
    )
