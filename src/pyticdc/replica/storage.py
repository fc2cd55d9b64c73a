"""Where a warehouse lives: a local directory or an object-store URL, and the options that reach it.

A warehouse is a local path (or ``file://`` URL) or any URL delta-rs writes to: ``s3://`` (also ``s3a://``),
``gs://``, ``az://``/``abfss://``, ``memory://``... Storage options are delta-rs' own (object_store keys);
for S3 the standard environment variables fill them (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_REGION``, ``AWS_ALLOW_HTTP``), and options given
explicitly (``--storage-option KEY=VALUE``) win.

Directory operations (list, move a table, remove one) go through delta-rs' own object-store file system
(:class:`deltalake.fs.DeltaStorageHandler`), so one set of options reaches the data and the tables.
An object store has no directory rename: :meth:`RemotePath.move_to` copies every object, then deletes the
source, commit log first (see there for why a crash between the two is harmless).

Commit safety on S3: delta-rs (since 0.23) commits each Delta version by writing ``_delta_log/N.json``
with a conditional put (``If-None-Match: *``); of two writers racing for version ``N`` one fails and
retries after re-reading the log (conflict checking; two commits carrying the same application
transaction conflict). The store must honour conditional puts (AWS S3 does since 2024, so do MinIO, R2 and
moto); ``AWS_S3_LOCKING_PROVIDER=dynamodb`` selects delta-rs' DynamoDB lock instead.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final, Union

from pyticdc.errors import ConfigError

__all__ = ["ENV_OPTIONS", "SCHEMES", "Location", "RemotePath", "is_remote", "location", "parse_storage_options",
           "reach_error", "storage_options"]

#: Environment variables copied into the storage options of an ``s3://`` warehouse.
ENV_OPTIONS: Final = ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                      "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ALLOW_HTTP", "AWS_S3_LOCKING_PROVIDER",
                      "AWS_S3_ALLOW_UNSAFE_RENAME")
_S3_SCHEMES: Final = frozenset({"s3", "s3a"})
#: URL schemes of the object stores the deltalake wheel writes to (besides local ``file``).
SCHEMES: Final = ("s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl", "azure", "lakefs", "hdfs", "viewfs")


def _scheme(text: str) -> str | None:
    scheme, sep, _ = text.partition("://")
    if sep and scheme.isascii() and scheme.replace("+", "").replace("-", "").isalnum():
        return scheme.lower()
    return None


def is_remote(text: str | os.PathLike[str]) -> bool:
    """Whether ``text`` names an object store (a URL whose scheme is not ``file``)."""
    scheme = _scheme(str(text))
    return scheme is not None and scheme != "file"


def reach_error(url: str, exc: BaseException) -> ConfigError:
    """A one-line ConfigError for an object store that could not be read (object_store errors span lines)."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))
    text = " ".join(part.strip(" ↳") for part in text.splitlines() if part.strip(" ↳"))
    return ConfigError(f"cannot reach the warehouse {url}: {text or type(exc).__name__}")


def parse_storage_options(items: list[str] | None) -> dict[str, str]:
    """``KEY=VALUE`` strings (``--storage-option``) as a dict; ConfigError on one without ``=``."""
    options: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--storage-option wants KEY=VALUE, got {item!r}")
        options[key.strip()] = value
    return options


def storage_options(url: str, explicit: Mapping[str, str] | None = None,
                    environ: Mapping[str, str] | None = None) -> dict[str, str] | None:
    """The delta-rs storage options of the warehouse at ``url``: environment (S3), then ``explicit``."""
    environ = os.environ if environ is None else environ
    options: dict[str, str] = {}
    if _scheme(url) in _S3_SCHEMES:
        options.update({name: environ[name] for name in ENV_OPTIONS if environ.get(name)})
        if "AWS_REGION" not in options and "AWS_DEFAULT_REGION" in options:
            options["AWS_REGION"] = options["AWS_DEFAULT_REGION"]
        options.pop("AWS_DEFAULT_REGION", None)
    options.update(explicit or {})
    return options or None


class RemotePath:
    """A path in an object store, with the few ``pathlib.Path`` operations the replica uses."""

    def __init__(self, url: str, options: Mapping[str, str] | None = None, *, _fs: Any = None) -> None:
        scheme, _, rest = url.partition("://")
        if scheme.lower() == "s3a":
            scheme = "s3"  # Hadoop's spelling of the same store
        self.url = f"{scheme.lower()}://{rest.strip('/')}"
        self.options = dict(options or {})
        self._fs = _fs

    # ------------------------------------------------------------------ path algebra
    def __str__(self) -> str:
        return self.url

    def __repr__(self) -> str:
        return f"RemotePath({self.url!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RemotePath) and other.url == self.url

    def __hash__(self) -> int:
        return hash(self.url)

    def __lt__(self, other: RemotePath) -> bool:
        return self.url < other.url

    def __truediv__(self, name: str) -> RemotePath:
        return RemotePath(f"{self.url}/{name.strip('/')}", self.options, _fs=self._fs)

    @property
    def name(self) -> str:
        """The last path component."""
        return self.url.rsplit("/", 1)[-1]

    @property
    def _root(self) -> str:
        scheme, _, rest = self.url.partition("://")
        return f"{scheme}://{rest.split('/', 1)[0]}"

    @property
    def key(self) -> str:
        """The path inside its bucket (what the file system is asked for)."""
        return self.url[len(self._root):].strip("/")

    @property
    def parent(self) -> RemotePath:
        """The enclosing folder (the bucket is its own parent)."""
        if not self.key:
            return self
        return RemotePath(self.url.rsplit("/", 1)[0], self.options, _fs=self._fs)

    def relative_to(self, other: RemotePath | Path) -> Path:
        """This path relative to ``other`` (a relative local-style Path, as the progress records paths)."""
        prefix = str(other) + "/"
        if not self.url.startswith(prefix):
            raise ValueError(f"{self.url} is not under {other}")
        return Path(self.url[len(prefix):])

    # ------------------------------------------------------------------ file system
    @property
    def fs(self) -> Any:
        """A pyarrow FileSystem over the bucket (delta-rs' object store, same options)."""
        if self._fs is None:
            import pyarrow.fs as pafs
            from deltalake.fs import DeltaStorageHandler

            self._fs = pafs.PyFileSystem(DeltaStorageHandler(self._root, self.options or None))
        return self._fs

    def _children(self, recursive: bool = False) -> list[Any]:
        import pyarrow.fs as pafs

        if not self.key:
            selector = pafs.FileSelector("", allow_not_found=True, recursive=recursive)
        else:
            selector = pafs.FileSelector(self.key, allow_not_found=True, recursive=recursive)
        return list(self.fs.get_file_info(selector))

    def exists(self) -> bool:
        """Whether any object lives at or under this path."""
        return bool(self._children())

    def is_dir(self) -> bool:
        """Whether objects live under this path (object stores have no empty folders)."""
        return self.exists()

    def iterdir(self) -> Iterator[RemotePath]:
        """The immediate children (objects and folders)."""
        for info in self._children():
            yield RemotePath(f"{self._root}/{info.path.strip('/')}", self.options, _fs=self._fs)

    def mkdir(self, parents: bool = False, exist_ok: bool = False) -> None:
        """Nothing to do: an object store creates folders with their first object."""
        del parents, exist_ok

    def rmdir(self) -> None:
        """Nothing to do: an empty folder does not exist in an object store."""

    def read_bytes(self) -> bytes:
        """The object's content."""
        with self.fs.open_input_stream(self.key) as stream:
            return bytes(stream.read())

    def write_bytes(self, data: bytes) -> None:
        """Write the object."""
        with self.fs.open_output_stream(self.key) as stream:
            stream.write(data)

    def _objects(self) -> list[str]:
        import pyarrow.fs as pafs

        return sorted(info.path.strip("/") for info in self._children(recursive=True)
                      if info.type == pafs.FileType.File)

    def remove_tree(self) -> None:
        """Delete every object under this path, the Delta log first (a half-deleted table is no table)."""
        objects = self._objects()
        # _last_checkpoint and checkpoints first, then commits oldest first: once 0.json is gone the log
        # cannot be replayed, so a crash mid-way leaves debris that no reader takes for the table.
        log = [o for o in objects if "/_delta_log/" in f"/{o}"]
        log.sort(key=lambda o: (not o.endswith("_last_checkpoint"), ".checkpoint." not in o, o))
        in_log = set(log)
        for name in [*log, *(o for o in objects if o not in in_log)]:
            self.fs.delete_file(name)

    def move_to(self, destination: RemotePath) -> None:
        """Copy every object to ``destination`` (the commit log last), then delete the source.

        A crash while copying leaves the source whole and the destination without a complete log; a crash
        while deleting leaves a source whose log is broken (see :meth:`remove_tree`) and a whole
        destination. The replica finds a table by the identity in its log, so either way it resumes right.
        """
        objects = self._objects()
        prefix = self.key + "/"
        data = [o for o in objects if "/_delta_log/" not in f"/{o}"]
        log = [o for o in objects if "/_delta_log/" in f"/{o}"]
        # deltalake's Python wrapper passes copy_file a keyword its Rust handler does not take (``dst`` for
        # ``dest``, 1.6.6): the handler is called directly, positionally.
        handler = self.fs.handler._handler
        for name in [*data, *log]:
            handler.copy_file(name, f"{destination.key}/{name[len(prefix):]}")
        self.remove_tree()


#: A warehouse path: local or in an object store.
Location = Union[Path, RemotePath]


def location(text: str | os.PathLike[str] | RemotePath, options: Mapping[str, str] | None = None) -> Location:
    """A local ``Path`` for a directory or ``file://`` URL, a :class:`RemotePath` for an object-store URL."""
    if isinstance(text, RemotePath):
        return text if options is None or dict(options) == text.options else RemotePath(text.url, options)
    raw = str(text)
    scheme = _scheme(raw)
    if scheme is None:
        return Path(raw)
    if scheme == "file":
        return Path(raw.partition("://")[2])
    rest = raw.partition("://")[2]
    if scheme not in SCHEMES:
        raise ConfigError(f"{raw!r}: unknown warehouse scheme {scheme}://; use a directory or one of "
                          + ", ".join(f"{s}://" for s in SCHEMES))
    if not rest.strip("/"):
        raise ConfigError(f"{raw!r}: an object-store warehouse needs a bucket (e.g. s3://bucket/warehouse)")
    return RemotePath(raw, options)
