"""`sexpgpu.lazynumpy`: numpy named at import, imported at first use. The op modules
hold `np.exp` as a reference; before numpy is imported that is a `Deferred`, which
must behave as numpy's function wherever a reference is used."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy

from sexpgpu.lazynumpy import Deferred, LazyNumpy


def test_a_deferred_attribute_is_numpys_once_used() -> None:
    exp = Deferred("exp")
    assert repr(exp) == "<numpy.exp, not yet imported>"
    assert exp(numpy.float64(0.0)) == 1.0 and exp.resolve() is numpy.exp
    assert Deferred("add").nin == 2  # an attribute of the function: numpy's
    assert isinstance(numpy.zeros(2), Deferred("ndarray"))
    assert pickle.loads(pickle.dumps(Deferred("maximum"))) is numpy.maximum


def test_after_numpys_import_the_attributes_are_numpys() -> None:
    np = LazyNumpy()
    assert np.exp is numpy.exp and np.float32 is numpy.float32


def test_importing_the_ops_imports_no_numpy() -> None:
    probe = ("import sys; import sexpgpu.ir.ops.registry as r, sexpgpu.ir.reference; "
             "assert 'numpy' not in sys.modules; "
             "y = r.get_op('exp').reference(r.get_op('full').reference((2,), 'f32', 0.0)); "
             "assert 'numpy' in sys.modules and y.tolist() == [1.0, 1.0]")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
