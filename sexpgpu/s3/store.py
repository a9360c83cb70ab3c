"""The few S3 operations SexpGPU needs, over one boto3 client: parse a URL, download an
object verified by size and ETag, upload a file, list a prefix. Every failure is E-S3."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sexpgpu.diagnostics import SexpError, define_code, error
from sexpgpu.record import record

E_S3 = define_code(
    "E-S3", "cannot use the S3 location",
    "An `s3://bucket/key` path (a data file, `--runs s3://...`) could not be read or "
    "written: boto3 is not installed (pip install 'sexpgpu[s3]'), no credentials were "
    "found in boto3's standard chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, "
    "~/.aws/credentials, an instance role), the bucket or key does not exist, access "
    "is denied, or the endpoint (AWS_ENDPOINT_URL for S3-compatible stores) does not "
    "answer. The diagnostic names the URL and what S3 said.",
)
CHUNK = 8 * 1024 * 1024  # boto3's default multipart part size: its ETags use it


@record(frozen=True)
class Url:
    bucket: str
    key: str

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.key}"

    def child(self, *parts: str) -> Url:
        key = "/".join(p.strip("/") for p in (self.key, *parts) if p.strip("/"))
        return Url(self.bucket, key)


def is_s3(path: Any) -> bool:
    return isinstance(path, str) and path.startswith("s3://")


def parse(url: str) -> Url:
    bucket, _, key = url.removeprefix("s3://").partition("/")
    if not bucket:
        raise error(E_S3, f"{url}: no bucket", expected="s3://BUCKET/KEY", actual=url,
                    fix="write s3://my-bucket/path/to/file")
    return Url(bucket, key.strip("/"))


def client() -> Any:
    """A boto3 S3 client from the standard chain (AWS_ENDPOINT_URL included)."""
    try:
        # boto3 is an optional extra, imported only when an s3:// path is used
        import boto3

        # botocore comes with boto3: the same optional extra
        from botocore.config import Config
    except ImportError:
        raise error(E_S3, "s3:// paths need the boto3 package", expected="boto3 installed",
                    actual="not importable", fix="pip install 'sexpgpu[s3]'") from None
    # a store that stops answering must not hold a run's mirror thread for ever
    return boto3.client("s3", config=Config(connect_timeout=10, read_timeout=60,
                                            retries={"max_attempts": 5}))


def failure(url: Url | str, exc: Exception, doing: str) -> SexpError:
    """E-S3 for an exception boto3 raised while `doing` something with `url`."""
    said = getattr(exc, "response", {}).get("Error", {})
    what = f"{said.get('Code')}: {said.get('Message')}" if said else f"{type(exc).__name__}: {exc}"
    return error(E_S3, f"{doing} {url} failed: {what}", expected="a reachable S3 location "
                 "with credentials that may use it", actual=what,
                 fix="check the bucket and key, the credentials (boto3's chain) and "
                 "AWS_ENDPOINT_URL")


def etag_of(path: Path, part: int = CHUNK) -> str:
    """The ETag S3 gives an object uploaded from `path` by boto3: the MD5 of the file
    in one part, or the MD5 of the parts' MD5s and `-N` when it took N parts."""
    import hashlib  # OpenSSL: ~4 ms that `check` (which imports this module) never needs

    size = path.stat().st_size
    digests = []
    with open(path, "rb") as fh:
        while block := fh.read(part):
            digests.append(hashlib.md5(block, usedforsecurity=False).digest())
    if size <= part:
        return digests[0].hex() if digests else hashlib.md5(b"").hexdigest()
    joined = hashlib.md5(b"".join(digests), usedforsecurity=False).hexdigest()
    return f"{joined}-{len(digests)}"


def head(s3: Any, url: Url) -> dict[str, Any]:
    try:
        return s3.head_object(Bucket=url.bucket, Key=url.key)
    except Exception as exc:  # noqa: BLE001 - botocore's errors are many classes
        raise failure(url, exc, "reading") from None


def verified(path: Path, size: int, etag: str) -> bool:
    """Whether the local file is the object: same size, and the same ETag when the
    ETag is an MD5 (a multipart one is checked with boto3's part size)."""
    if not path.is_file() or path.stat().st_size != size:
        return False
    etag = etag.strip('"')
    parts = etag.partition("-")[2]
    if parts and parts.isdigit():
        return etag_of(path, CHUNK) == etag
    return etag_of(path, max(size, 1)) == etag


def download(s3: Any, url: Url, dest: Path) -> Path:
    """Fetch `url` to `dest` (temp file, then rename), and verify it."""
    meta = head(s3, url)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.part-{os.getpid()}")
    try:
        s3.download_file(url.bucket, url.key, str(tmp))
    except Exception as exc:  # noqa: BLE001 - botocore's errors are many classes
        tmp.unlink(missing_ok=True)
        raise failure(url, exc, "downloading") from None
    if not verified(tmp, int(meta["ContentLength"]), str(meta.get("ETag", ""))):
        tmp.unlink(missing_ok=True)
        raise error(E_S3, f"downloading {url}: the copy does not match the object",
                    expected=f"{meta['ContentLength']} bytes, ETag {meta.get('ETag')}",
                    actual="another size or checksum", fix="try again; the object may "
                    "have changed while it was read")
    os.replace(tmp, dest)
    return dest


def upload(s3: Any, path: Path, url: Url) -> None:
    """Upload a file that no longer changes (a checkpoint's); for one still being
    appended to (events.jsonl), `put_bytes` a snapshot: a body that grows while it
    is streamed no longer matches its length and checksum, and the request hangs."""
    try:
        s3.upload_file(str(path), url.bucket, url.key)
    except Exception as exc:  # noqa: BLE001 - botocore's errors are many classes
        raise failure(url, exc, "uploading to") from None


def put_bytes(s3: Any, data: bytes, url: Url) -> None:
    try:
        s3.put_object(Bucket=url.bucket, Key=url.key, Body=data)
    except Exception as exc:  # noqa: BLE001 - botocore's errors are many classes
        raise failure(url, exc, "uploading to") from None


def keys(s3: Any, url: Url) -> list[str]:
    """Every key under the prefix `url` (the prefix taken as a folder)."""
    prefix = url.key + "/" if url.key else ""
    found: list[str] = []
    try:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=url.bucket,
                                                                 Prefix=prefix):
            found += [item["Key"] for item in page.get("Contents", [])]
    except Exception as exc:  # noqa: BLE001 - botocore's errors are many classes
        raise failure(url, exc, "listing") from None
    return found
