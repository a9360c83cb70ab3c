"""Run directory names: readable (the knobs a run changes), never cut inside a value,
unique (a hash of the sources and the whole selection), the same in every process;
long selections abbreviate knob by knob; plan.json holds the full selection."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from cmd_helpers import ROOT

from sexpgpu.contract.compile import compile_file
from sexpgpu.contract.plan import run_plan
from sexpgpu.runtime import rundir
from sexpgpu.runtime.rundir import SELECTION_BUDGET, abbreviate, selection_words
from sexpgpu.selection import Selection

MLP = str(ROOT / "examples" / "mnist1d-mlp.sx")
GPT = str(ROOT / "examples" / "shakespeare-char.sx")


def _name(path: str, **sets: str) -> str:
    plan = run_plan(compile_file(path, Selection.from_args([f"{k}={v}" for k, v in
                                                            sets.items()])))
    return rundir.slug_for(plan)


@pytest.mark.parametrize("steps", ["300", "2000", "30"])
def test_a_value_is_never_cut(steps: str) -> None:
    name = _name(MLP, steps=steps)
    stem, knobs, digest = name.rsplit("-", 2)
    assert stem == "mnist1d" or name.startswith("mnist1d-mlp-")
    assert knobs == f"steps={steps}" and len(digest) == 8


def test_the_defaults_name_only_the_file_and_the_hash() -> None:
    name = _name(MLP)
    assert name.startswith("mnist1d-mlp-") and len(name) == len("mnist1d-mlp-") + 8


def test_names_differ_by_selection_and_are_stable_across_processes() -> None:
    names = {_name(MLP, lr=v) for v in ("0.03", "0.003", "3e-2")}
    assert len(names) == 2  # 0.03 and 3e-2 are one value, one run
    assert _name(MLP, lr="3e-2") == _name(MLP, lr="0.03")
    code = ("import sys; sys.path.insert(0, 'tests'); from test_run_names import _name; "
            f"print(_name({MLP!r}, lr='0.03', hidden='64'))")
    other = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                           text=True, check=True, env={"PYTHONHASHSEED": "123",
                                                       "PATH": "/usr/bin:/bin"})
    assert other.stdout.strip() == _name(MLP, lr="0.03", hidden="64")
    assert "-lr=0.03,hidden=64-" in other.stdout  # the file declares lr first


def test_a_data_path_is_its_file_name_and_eats_nothing() -> None:
    name = _name(GPT, data="data/shakespeare_char/other.txt", steps="300", lr="3e-4")
    assert "-data=other.txt,steps=300,lr=0.0003-" in name


@pytest.mark.parametrize("selection, defaults, expected", [
    # changed knobs only, in the file's order, whole values
    ({"steps": 300, "lr": 0.01}, {"steps": 8000, "lr": 0.01}, "steps=300"),
    # awkward values: keywords, flags, spaces and = in strings, negative numbers
    ({"act": ":relu", "flag": True, "tag": "a b=c", "shift": -0.5}, {},
     "act=relu,flag=t,tag=a_b_c,shift=-0.5"),
    # too long: names abbreviated one at a time from the first, until it fits
    ({"n-layer": 6, "n-head": 6, "n-embd": 384, "dropout": 0.2, "learning-rate": 3e-4}, {},
     "nl=6,nh=6,ne=384,drp=0.2,learning-rate=0.0003"),
    # still too long: the knobs that do not fit are counted, never cut
    ({"data": "data/shakespeare_char/input.txt", "steps": 2000, "lr": 0.001,
      "min-lr": 0.0001, "warmup": 100, "n-layer": 6, "n-head": 6, "n-embd": 384,
      "context": 256, "batch": 64, "vocab": 65, "dropout": 0.2, "seed": 1337}, {},
     "dt=input.txt,stp=2000,lr=0.001,ml=0.0001,nl=6,+8"),
    # one value longer than the budget is left out whole
    ({"data": "/d/" + "x" * 60 + ".txt", "steps": 5}, {}, "stp=5,+1"),
])
def test_selection_words(selection, defaults, expected) -> None:
    words = selection_words(selection, defaults)
    assert words == expected and len(words) <= SELECTION_BUDGET


def test_abbreviations() -> None:
    assert [abbreviate(k) for k in ("n-layer", "min-lr", "hidden", "steps", "lr", "seed")] \
        == ["nl", "ml", "hdd", "stp", "lr", "sd"]


def test_plan_json_has_the_full_selection(tmp_path) -> None:
    plan = run_plan(compile_file(MLP, Selection.from_args(["lr=0.03"])))
    run_dir = tmp_path / rundir.slug_for(plan)
    rundir.create(run_dir, plan)
    stored = orjson.loads((run_dir / "plan.json").read_bytes())
    assert stored["selection"] == {"steps": 8000, "lr": 0.03, "hidden": 256, "batch": 100,
                                   "seed": 42}
    assert stored["defaults"]["lr"] == 0.01


def test_the_names_docs_run_md_quotes_are_the_real_ones() -> None:
    text = (ROOT / "docs" / "run.md").read_text(encoding="utf-8")
    for quoted, sets in (("mnist1d-mlp-3893eb6d", {}), ("mnist1d-mlp-steps=300-c08be641",
                                                         {"steps": "300"}),
                         ("mnist1d-mlp-lr=0.03,hidden=64-4111b4ca",
                          {"lr": "3e-2", "hidden": "64"})):
        assert f"\n{quoted} " in text
        assert _name(MLP, **sets) == quoted


def test_the_name_does_not_depend_on_where_the_files_lie(tmp_path: Path) -> None:
    names = []
    for where in ("a", "b/deeper"):
        folder = tmp_path / where
        folder.mkdir(parents=True)
        copy = folder / "mnist1d-mlp.sx"
        copy.write_text(Path(MLP).read_text(encoding="utf-8"), encoding="utf-8")
        names.append(_name(str(copy), steps="300"))
    assert names[0] == names[1] == _name(MLP, steps="300")
