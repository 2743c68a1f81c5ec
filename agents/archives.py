"""Unpacking an uploaded agent tree (``.tar.gz`` or ``.zip``) without trusting it.

An archive is a tenant's file: it may name absolute paths or ``..`` to write outside the
folder it is unpacked into, carry symlinks, hard links, devices or fifos, or expand to far
more than it weighs (an archive bomb). ``unpack`` writes regular files and folders only,
each checked by name before anything is written, counts the bytes it really writes (not
what the headers claim), and stops at the first refusal with ``ArchiveRefused``; the
caller removes the half-written folder. Its root may hold only ``agent/`` and ``evals/``.
"""

from __future__ import annotations

import stat
import tarfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from agent_platform.errors import DomainError

CHUNK = 64 * 1024
ROOT_ENTRIES = frozenset({"agent", "evals"})
GZIP_MAGIC = b"\x1f\x8b"
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")


class ArchiveRefused(DomainError):
    """The upload is not an archive the platform unpacks; the message says why."""

    status, code = 400, "archive_refused"


@dataclass(frozen=True)
class Limits:
    files: int
    bytes: int


@dataclass
class Unpacked:
    files: int = 0
    bytes: int = 0


def archive_kind(path: Path) -> str:
    """``"tar.gz"`` or ``"zip"`` by the file's first bytes (not by what the client says).

    Raises:
        ArchiveRefused: for anything else.
    """
    with path.open("rb") as file:
        head = file.read(4)
    if head.startswith(GZIP_MAGIC):
        return "tar.gz"
    if head in ZIP_MAGICS:
        return "zip"
    raise ArchiveRefused("The body is neither a gzip-compressed tar archive nor a zip archive.")


def member_path(name: str) -> PurePosixPath | None:
    """The relative path an archive member names (None for the root itself).

    Raises:
        ArchiveRefused: for an absolute path, ``..``, a NUL or a backslash, or a first
            segment other than ``agent`` or ``evals``.
    """
    if "\x00" in name or "\\" in name:
        raise ArchiveRefused(f"Archive member {name[:200]!r} has a NUL or a backslash in its name.")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise ArchiveRefused(f"Archive member {name[:200]!r} is an absolute path; use paths relative to the root.")
    parts = [part for part in name.split("/") if part not in {"", "."}]
    if ".." in parts:
        raise ArchiveRefused(f"Archive member {name[:200]!r} has a '..' segment.")
    if not parts:
        return None
    if parts[0] not in ROOT_ENTRIES:
        raise ArchiveRefused(
            f"Archive member {name[:200]!r} is outside agent/ and evals/: the archive's root holds "
            "agent/ (and optionally evals/) and nothing else."
        )
    return PurePosixPath(*parts)


class _Writer:
    """Writes members under ``target``, keeping the counts within ``limits``."""

    def __init__(self, target: Path, limits: Limits) -> None:
        self.target, self.limits, self.done = target, limits, Unpacked()
        self.seen: set[PurePosixPath] = set()

    def _count(self, relative: PurePosixPath) -> Path:
        if relative in self.seen:
            raise ArchiveRefused(f"Archive member {str(relative)!r} appears twice.")
        self.seen.add(relative)
        self.done.files += 1
        if self.done.files > self.limits.files:
            raise ArchiveRefused(
                f"The archive holds more than {self.limits.files} entries (PLATFORM_DEPLOY_MAX_FILES)."
            )
        destination = self.target.joinpath(*relative.parts)
        for parent in relative.parents:
            if parent != PurePosixPath(".") and self.target.joinpath(*parent.parts).is_file():
                raise ArchiveRefused(f"Archive member {str(relative)!r} is inside {str(parent)!r}, which is a file.")
        return destination

    def folder(self, relative: PurePosixPath) -> None:
        destination = self._count(relative)
        if destination.is_file():
            raise ArchiveRefused(f"Archive member {str(relative)!r} is both a file and a folder.")
        destination.mkdir(parents=True, exist_ok=True)

    def file(self, relative: PurePosixPath, declared: int, source: IO[bytes]) -> None:
        destination = self._count(relative)
        if destination.is_dir():
            raise ArchiveRefused(f"Archive member {str(relative)!r} is both a file and a folder.")
        if self.done.bytes + declared > self.limits.bytes:
            raise self._too_big()
        destination.parent.mkdir(parents=True, exist_ok=True)
        with destination.open("xb") as out:
            while chunk := source.read(CHUNK):
                self.done.bytes += len(chunk)
                if self.done.bytes > self.limits.bytes:  # the header lied
                    raise self._too_big()
                out.write(chunk)

    def _too_big(self) -> ArchiveRefused:
        return ArchiveRefused(
            f"The archive unpacks to more than {self.limits.bytes} bytes (PLATFORM_DEPLOY_MAX_UNPACKED_BYTES)."
        )


def _tar(archive: Path, writer: _Writer) -> None:
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for member in tar:  # one header at a time: a bomb of headers stops at the count
                relative = member_path(member.name)
                if member.issym() or member.islnk():
                    raise ArchiveRefused(f"Archive member {member.name[:200]!r} is a link; links are refused.")
                if member.isdev() or member.isfifo():
                    raise ArchiveRefused(f"Archive member {member.name[:200]!r} is a device or a fifo.")
                if relative is None:
                    continue
                if member.isdir():
                    writer.folder(relative)
                elif member.isreg():
                    source = tar.extractfile(member)
                    assert source is not None  # a regular member always has content
                    writer.file(relative, member.size, source)
                else:
                    raise ArchiveRefused(f"Archive member {member.name[:200]!r} is not a file or a folder.")
    except (tarfile.TarError, EOFError, OSError, UnicodeDecodeError) as error:
        if isinstance(error, FileExistsError):
            raise ArchiveRefused(f"An archive member is written twice: {error.filename}") from None
        raise ArchiveRefused(f"The tar archive cannot be read: {error}") from None


def _zip(archive: Path, writer: _Writer) -> None:
    try:
        with zipfile.ZipFile(archive) as bundle:
            entries = bundle.infolist()
            if len(entries) > writer.limits.files:
                raise ArchiveRefused(
                    f"The archive holds more than {writer.limits.files} entries (PLATFORM_DEPLOY_MAX_FILES)."
                )
            for info in entries:
                relative = member_path(info.filename)
                mode = info.external_attr >> 16
                kind = stat.S_IFMT(mode)
                if kind == stat.S_IFLNK:
                    raise ArchiveRefused(f"Archive member {info.filename[:200]!r} is a link; links are refused.")
                if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
                    raise ArchiveRefused(f"Archive member {info.filename[:200]!r} is not a file or a folder.")
                if relative is None:
                    continue
                if info.is_dir():
                    writer.folder(relative)
                else:
                    with bundle.open(info) as source:
                        writer.file(relative, info.file_size, source)
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        NotImplementedError,  # zipfile's answer to a compression method it does not support
        EOFError,
        OSError,
        UnicodeDecodeError,
    ) as error:
        if isinstance(error, FileExistsError):
            raise ArchiveRefused(f"An archive member is written twice: {error.filename}") from None
        raise ArchiveRefused(f"The zip archive cannot be read: {error}") from None


def unpack(archive: Path, target: Path, limits: Limits) -> Unpacked:
    """Unpack ``archive`` into the new folder ``target``; returns what was written.

    Raises:
        ArchiveRefused: for an unreadable archive or a member refused (see the module);
            ``target`` may then hold part of the tree (the caller removes it).
    """
    kind = archive_kind(archive)
    target.mkdir(parents=True)
    writer = _Writer(target, limits)
    (_tar if kind == "tar.gz" else _zip)(archive, writer)
    if not (target / "agent").is_dir():
        raise ArchiveRefused("The archive has no agent/ folder at its root.")
    return writer.done


@contextmanager
def spooled(chunks: Iterator[bytes], into: Path, cap: int) -> Iterator[Path]:
    """Write ``chunks`` to the file ``into`` (never holding more than one chunk), refusing
    more than ``cap`` bytes; yields the file and removes it afterwards.

    Raises:
        ArchiveRefused: (413) past ``cap``.
    """
    written = 0
    try:
        with into.open("xb") as out:
            for chunk in chunks:
                written += len(chunk)
                if written > cap:
                    raise ArchiveRefused(
                        f"The archive is larger than {cap} bytes (PLATFORM_DEPLOY_MAX_BYTES).",
                        status=413,
                        code="body_too_large",
                    )
                out.write(chunk)
        yield into
    finally:
        into.unlink(missing_ok=True)
