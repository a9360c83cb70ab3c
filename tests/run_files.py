"""Run files written by tests: a small MLP on the synthetic classes task."""

from __future__ import annotations


def mlp(widths: tuple[int, ...], batch: int, n: int, optimizer: str, steps: int) -> str:
    """A run file training an MLP of `widths` (the input's first, the classes' last,
    relu between) for `steps` steps with `optimizer` (its form, `(optim:adam ...)`)."""
    layers = list(zip(widths, widths[1:]))
    children = "\n".join(f"  (defchild l{k} (nn:linear {a} {b}))"
                         for k, (a, b) in enumerate(layers, 1))
    body = "x"
    for k in range(1, len(layers) + 1):
        body = f"(l{k} {body})" if k == 1 else f"(l{k} (relu {body}))"
    source = (f"(synthetic :task :classes :n {n} :dim {widths[0]} :classes {widths[-1]}"
              " :split :train)")
    return f"""
(require "sexpgpu/nn" :as nn)
(require "sexpgpu/optim" :as optim)
(defknob steps {steps} "steps")
(defloader train :source {source}
  :batch {batch})
(defmodel mlp ()
{children}
  (lambda (x) {body}))
(defobjective (model &key x y)
  (nn:cross-entropy (model x) y))
(optimizer {optimizer})
(defrun :steps steps)
"""
