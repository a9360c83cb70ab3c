"""`--runs s3://BUCKET/PREFIX`: the run directory lives in a local staging folder and
is mirrored to S3 as it is written: plan, source, events and status continuously (at
most every PUSH_EVERY_S seconds, and at every eval, checkpoint and the close), each
checkpoint once it is complete locally, its manifest last, so a checkpoint on S3 with a
manifest is whole. `pull` brings a run back to a fresh machine for `--resume latest`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from sexpgpu import env
from sexpgpu.diagnostics import SexpError
from sexpgpu.s3.store import Url, client, download, keys, put_bytes, upload
from sexpgpu.trackers import config

PUSH_EVERY_S = 5.0
MANIFEST = "manifest.json"


def staging_dir(runs: Url) -> Path:
    """The local folder a `--runs s3://...` run is written in before it is mirrored."""
    return env.cache_dir() / "s3-runs" / runs.bucket / runs.key


class RunMirror:
    """A tracker-style sink (trackers/mirror.py runs it on its thread) that copies one
    run directory to `target` (s3://BUCKET/PREFIX/RUN-NAME)."""

    def __init__(self, run_dir: Path, target: Url):
        self.run_dir, self.target = Path(run_dir), target
        self.s3 = client()
        self.pushed_at = 0.0
        self._push_files(["plan.json", *self._relative(self.run_dir / "source")])

    def write(self, record: dict[str, Any]) -> None:
        kind = record.get("event")
        if kind == "checkpoint":
            self._push_checkpoint(self.run_dir / str(record["path"]))
        if kind != "step" or time.monotonic() - self.pushed_at >= PUSH_EVERY_S:
            self._push_files(["events.jsonl", "status.json"])
            self.pushed_at = time.monotonic()

    def close(self) -> None:
        self._push_files(["events.jsonl", "status.json"])

    def _relative(self, folder: Path) -> list[str]:
        return sorted(str(p.relative_to(self.run_dir)) for p in folder.rglob("*")
                      if p.is_file())

    def _push_files(self, names: list[str]) -> None:
        """Snapshots of small files that may still grow (events, status, plan, source)."""
        for name in names:
            path = self.run_dir / name
            if path.is_file():
                put_bytes(self.s3, path.read_bytes(), self.target.child(name))

    def _push_checkpoint(self, folder: Path) -> None:
        """Every file of the checkpoint, the manifest last; one pruned away locally
        before its turn came is skipped (a newer one follows)."""
        if not (folder / MANIFEST).is_file():
            return
        names = [n for n in self._relative(folder) if not n.endswith("/" + MANIFEST)]
        names.append(str((folder / MANIFEST).relative_to(self.run_dir)))
        try:
            for name in names:  # complete and never rewritten: streamed from disk
                upload(self.s3, self.run_dir / name, self.target.child(name))
        except SexpError:
            if folder.is_dir():
                raise
            return  # pruned while its files went up: no manifest was sent, S3 ignores it
        self._forget_pruned()

    def _forget_pruned(self) -> None:
        """Checkpoints pruned locally are deleted on S3 too, manifest first, so no
        reader ever sees a manifest whose files are gone."""
        root = self.target.child("checkpoints")
        by_folder: dict[str, list[str]] = {}
        for key in keys(self.s3, root):
            name = key[len(root.key) + 1:].split("/", 1)[0]
            by_folder.setdefault(name, []).append(key)
        for name, found in by_folder.items():
            if (self.run_dir / "checkpoints" / name).is_dir():
                continue
            ordered = sorted(found, key=lambda k: not k.endswith("/" + MANIFEST))
            for key in ordered:
                self.s3.delete_object(Bucket=self.target.bucket, Key=key)


def pull(target: Url, run_dir: Path) -> bool:
    """Copy a run mirrored at `target` into `run_dir` (which must not exist): its plan,
    source, events, status and every checkpoint whose manifest arrived (a checkpoint
    cut short by a kill during its upload has none and stays behind). False when S3
    has no such run."""
    s3 = client()
    found = keys(s3, target)
    if not any(k.endswith("/plan.json") for k in found):
        return False
    complete = {k.rsplit("/", 1)[0] for k in found if k.endswith("/" + MANIFEST)}
    for key in found:
        rel = key[len(target.key) + 1:] if target.key else key
        folder = key.rsplit("/", 1)[0]
        if rel.startswith("checkpoints/") and folder not in complete:
            continue
        download(s3, Url(target.bucket, key), run_dir / rel)
    return True


def prepare(runs: Url, name: str, resume: str | None) -> Path:
    """The local runs folder for `--runs s3://...`: with `--resume`, a run S3 has and
    this machine has not is pulled first; every run of this process is mirrored to
    s3://.../NAME by a background sink (trackers/mirror.py)."""
    local = staging_dir(runs)
    target = runs.child(name)
    keys(client(), runs)  # reach S3 now: a bad bucket or credentials stop before training
    if resume is not None and not (local / name).exists():
        pull(target, local / name)
    config.also("s3", lambda run_dir, opened: RunMirror(run_dir, target), f"--runs {runs}")
    return local
