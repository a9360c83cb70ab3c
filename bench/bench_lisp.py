"""Lisp speed: prelude + a 120-line file in-process (< 50 ms), and a cold `sexpgpu eval -e`.

Run: python -m pytest bench/bench_lisp.py --benchmark-only
"""

from __future__ import annotations

import io
import subprocess
import sys

from sexpgpu.lisp import Interpreter

# A 120-line file of typical run-file header code: definitions, macros, loops, tables.
TYPICAL = r"""
(defparameter *hidden* 256)
(defparameter *layers* 4)
(defvar *registry* (make-hash-table :test 'equal))

(defmacro defblock (name (&rest args) &body body)
  "Register a block constructor under NAME."
  `(progn
     (defun ,name ,args ,@body)
     (setf (gethash ,(string-downcase (symbol-name name)) *registry*) #',name)
     ',name))

(defmacro with-scope ((var path) &body body)
  (with-gensyms (old)
    `(let* ((,old ,path)
            (,var (concatenate 'string ,old "/")))
       ,@body)))

(defmacro square (x)
  (once-only (x) `(* ,x ,x)))

(defun param-count (shape)
  (reduce #'* shape :initial-value 1))

(defblock linear (in out &key (bias t))
  (list :kind :linear
        :weight (list in out)
        :bias (when bias (list out))
        :params (+ (param-count (list in out)) (if bias out 0))))

(defblock mlp (in hidden out &key (depth 2))
  (let ((layers '()))
    (push (linear in hidden) layers)
    (dotimes (i (- depth 2))
      (push (linear hidden hidden) layers))
    (push (linear hidden out :bias nil) layers)
    (nreverse layers)))

(defun total-params (layers)
  (loop for layer in layers
        sum (getf layer :params)))

(defun layer-shapes (layers)
  (mapcar (lambda (l) (getf l :weight)) layers))

(defun describe-layers (layers)
  (with-output-to-string (s)
    (loop for l in layers
          for i from 0
          do (format s "~a: ~{~a~^x~} (~:d params)~%" i (getf l :weight)
                     (getf l :params)))))

(defun schedule (step &key (warmup 100) (total 1000) (peak 1d-3))
  (cond ((< step warmup) (* peak (/ step warmup)))
        (t (let ((progress (/ (- step warmup) (max 1 (- total warmup)))))
             (* peak 0.5d0 (+ 1 (cos (* pi progress))))))))

(defun lr-table (steps)
  (loop for s from 0 below steps by 50
        collect (cons s (schedule s))))

(defstruct knob-spec name value doc)

(defvar *knobs* nil)

(defmacro defknob* (name value &optional doc)
  `(push (make-knob-spec :name ',name :value ,value :doc ,doc) *knobs*))

(defknob* lr 1d-2 "learning rate")
(defknob* hidden 256)
(defknob* seed 42 "random seed")

(defun knob-value (name)
  (let ((k (find name *knobs* :key #'knob-spec-name)))
    (if k (knob-value-of k) (error "unknown knob ~a" name))))

(defun knob-value-of (k) (knob-spec-value k))

(defun fib (n)
  (if (< n 2) n (+ (fib (- n 1)) (fib (- n 2)))))

(defun primes-below (n)
  (loop for i from 2 below n
        when (loop for d from 2 to (isqrt i) never (zerop (mod i d)))
          collect i))

(defun word-counts (words)
  (let ((table (make-hash-table :test 'equal)))
    (dolist (w words)
      (incf (gethash w table 0)))
    (sort (loop for k being the hash-keys of table using (hash-value v)
                collect (cons k v))
          #'> :key #'cdr)))

(defun flatten (tree)
  (cond ((null tree) nil)
        ((atom tree) (list tree))
        (t (append (flatten (car tree)) (flatten (cdr tree))))))

(defun group-by-size (layers)
  (let ((small '()) (large '()))
    (dolist (l layers)
      (if (> (getf l :params) 10000)
          (push l large)
          (push l small)))
    (values (nreverse small) (nreverse large))))

(let* ((net (mlp 40 *hidden* 10 :depth *layers*))
       (n (total-params net)))
  (multiple-value-bind (small large) (group-by-size net)
    (setf (gethash "summary" *registry*)
          (list :params n :small (length small) :large (length large)
                :shapes (layer-shapes net)
                :text (describe-layers net)
                :squares (loop for i below 10 collect (square i))
                :flat (flatten '(1 (2 (3 4)) ((5))))
                :words (word-counts '("a" "b" "a" "c" "b" "a"))
                :primes (primes-below 60)
                :fib (fib 12)
                :lr (lr-table 400)))))

(with-scope (p "model")
  (setf (gethash p *registry*) (mlp 8 16 4)))
"""


def _load_typical() -> Interpreter:
    interp = Interpreter(io.StringIO())
    interp.load(TYPICAL, "typical.sx")
    return interp


def test_prelude_plus_typical_file(benchmark) -> None:
    """Target: under 50 ms per iteration (prelude load + read + evaluate 120 lines)."""
    interp = benchmark(_load_typical)
    assert TYPICAL.count("\n") >= 120
    assert interp.get_global("*registry*") is not None


def test_cold_eval_expression(benchmark) -> None:
    """Target: a cold `sexpgpu eval -e '(+ 1 2)'` under 0.3 s, numpy/numba not imported."""
    code = ("import sys; from sexpgpu.cli import main; rc = main(['eval', '-e', '(+ 1 2)']); "
            "assert 'numpy' not in sys.modules and 'numba' not in sys.modules; sys.exit(rc)")

    def run() -> str:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True)
        return done.stdout

    assert benchmark.pedantic(run, rounds=5, iterations=1) == "3\n"
