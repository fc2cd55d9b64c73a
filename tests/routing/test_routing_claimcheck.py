"""Claim-check storage over ``file://`` URIs (§8, tiflow ``pkg/sink/kafka/claimcheck``)."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyticdc.codec.base import ClaimCheckStore
from pyticdc.errors import ConfigError, DecodeError
from pyticdc.routing import FileClaimCheckStore, claim_check_store

UUID_JSON = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\.json")


def test_put_writes_go_json_envelope(tmp_path: Path) -> None:
    store = claim_check_store(f"file://{tmp_path}/claims/")
    location = store.put(b"\x00key", b"value<&>")
    name = location.rsplit("/", 1)[1]
    assert UUID_JSON.fullmatch(name)
    # TestClaimCheckFileName: FileNameWithPrefix = storage URI (trailing "/" trimmed) + "/" + file name.
    assert location == f"file://{tmp_path}/claims/{name}"
    stored = (tmp_path / "claims" / name).read_bytes()
    assert stored == b'{"key":"AGtleQ==","value":"dmFsdWU8Jj4="}'
    assert store.get(location) == (b"\x00key", b"value<&>")
    assert sorted(p.name for p in (tmp_path / "claims").iterdir()) == [name]  # no temporary file left


def test_nil_key_is_json_null(tmp_path: Path) -> None:
    store = FileClaimCheckStore(f"file://{tmp_path}")
    location = store.put(None, b"v")
    assert orjson.loads((tmp_path / location.rsplit("/", 1)[1]).read_bytes()) == {"key": None, "value": "dg=="}
    assert store.get(location) == (None, b"v")


def test_raw_value(tmp_path: Path) -> None:
    store = claim_check_store(f"file://{tmp_path}", raw_value=True)
    location = store.put(b"ignored", b"\xff raw bytes")
    assert (tmp_path / location.rsplit("/", 1)[1]).read_bytes() == b"\xff raw bytes"
    assert store.get(location) == (None, b"\xff raw bytes")


def test_get_reads_by_file_name_like_the_consumer(tmp_path: Path) -> None:
    writer = FileClaimCheckStore(f"file://{tmp_path}/a")
    location = writer.put(b"k", b"v")
    moved = tmp_path / "b"
    moved.mkdir()
    (tmp_path / "a" / location.rsplit("/", 1)[1]).rename(moved / location.rsplit("/", 1)[1])
    # A consumer configured with another storage URI reads the same file name from its own storage.
    assert FileClaimCheckStore(f"file://{moved}").get(location) == (b"k", b"v")


def test_missing_and_corrupt_objects_are_decode_errors(tmp_path: Path) -> None:
    store = FileClaimCheckStore(f"file://{tmp_path}")
    with pytest.raises(DecodeError, match="no stored message"):
        store.get(f"file://{tmp_path}/nope.json")
    for content, message in ((b"{not json", "not JSON"), (b"[1]", "expected a JSON object"),
                             (b'{"key":null,"value":"***"}', "invalid base64"),
                             (b'{"key":1,"value":"dg=="}', "expected base64")):
        (tmp_path / "bad.json").write_bytes(content)
        with pytest.raises(DecodeError, match=message) as info:
            store.get(f"file://{tmp_path}/bad.json")
        assert info.value.protocol == "claim-check"


def test_unsupported_uris_are_config_errors() -> None:
    for uri, message in (("s3://bucket/prefix", "supported schemes: file"), ("/tmp/x", "scheme '\\(none\\)'"),
                         ("file://relative/dir", "host part"), ("file://", "no path")):
        with pytest.raises(ConfigError, match=message):
            claim_check_store(uri)


def test_store_satisfies_the_codec_protocol(tmp_path: Path) -> None:
    store: ClaimCheckStore = FileClaimCheckStore(f"file://{tmp_path}")
    assert store.get(store.put(b"k", b"v")) == (b"k", b"v")


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=30)
@given(st.one_of(st.none(), st.binary(max_size=64)), st.binary(max_size=256))
def test_round_trip(tmp_path: Path, key: bytes | None, value: bytes) -> None:
    store = FileClaimCheckStore(f"file://{tmp_path}")
    location = store.put(key, value)
    assert store.get(location) == (key, value)
    envelope = orjson.loads((tmp_path / location.rsplit("/", 1)[1]).read_bytes())
    assert base64.b64decode(envelope["value"]) == value
