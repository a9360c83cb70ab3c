"""`s3://` data paths: each object downloaded once into the cache
(<cache>/s3/BUCKET/KEY), and used again only while it still matches the object's
size and ETag (one HEAD request per use)."""

from __future__ import annotations

from pathlib import Path

from sexpgpu import env
from sexpgpu.s3.store import client, download, head, parse, verified


def cached_path(url: str) -> Path:
    u = parse(url)
    return env.cache_dir() / "s3" / u.bucket / u.key


def local_copy(url: str) -> Path:
    """The local file holding the object at `url`, downloaded when absent or stale."""
    u = parse(url)
    path = cached_path(url)
    s3 = client()
    meta = head(s3, u)
    if verified(path, int(meta["ContentLength"]), str(meta.get("ETag", ""))):
        return path
    return download(s3, u, path)
