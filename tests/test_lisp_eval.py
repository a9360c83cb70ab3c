"""Evaluator features, each program checked against the output SBCL printed for it.

The expected strings were produced by `sbcl --script` on the same program (with the
prelude's once-only and with-gensyms definitions prepended for those two cases).
"""

from __future__ import annotations

import pytest

from sexpgpu.lisp import run_program

CASES = {
    'closures-counter': (
        '(defun make-counter () (let ((n 0)) (lambda () (incf n))))\n(let ((c (m'
        'ake-counter))) (funcall c) (print (funcall c)))',
        '\n2 ',
    ),
    'optional-supplied': (
        '(defun f (a &optional (b 10 b-p)) (list a b b-p))\n(print (f 1)) (print'
        ' (f 1 2))',
        '\n(1 10 NIL) \n(1 2 T) ',
    ),
    'keys-and-rest': (
        '(defun g (&rest all &key (x 1) y &allow-other-keys) (list all x y))\n(p'
        'rint (g :y 2 :z 3))',
        '\n((:Y 2 :Z 3) 1 2) ',
    ),
    'destructuring-macro': (
        '(defmacro my-let1 ((var val) &body body) `(let ((,var ,val)) ,@body))\n'
        '(print (my-let1 (x 5) (* x x)))',
        '\n25 ',
    ),
    'macroexpand': (
        "(defmacro inc2 (p) `(setf ,p (+ ,p 2)))\n(print (macroexpand-1 '(inc2 x"
        ')))',
        '\n(SETF X (+ X 2)) ',
    ),
    'gensym-macro': (
        '(defmacro swap (a b) (let ((tmp (gensym))) `(let ((,tmp ,a)) (setf ,a '
        ',b) (setf ,b ,tmp))))\n(let ((x 1) (y 2)) (swap x y) (print (list x y))'
        ')',
        '\n(2 1) ',
    ),
    'nested-backquote': (
        "(defmacro def-adder (name n) `(defmacro ,name (x) `(+ ,x ,',n)))\n(def-"
        'adder add5 5)\n(print (add5 10))',
        '\n15 ',
    ),
    'multiple-values': (
        '(multiple-value-bind (q r) (truncate 17 5) (print (list q r)))\n(print '
        '(multiple-value-list (round 2.5)))\n(print (nth-value 1 (floor -7 2)))',
        '\n(3 2) \n(2 0.5) \n1 ',
    ),
    'setf-places': (
        '(let ((l (list 1 2 3)) (h (make-hash-table))) (setf (second l) 20 (get'
        "hash :k h) 'v) (push 0 l) (print l) (print (gethash :k h)) (print (pop"
        ' l)))',
        '\n(0 1 20 3) \nV \n0 ',
    ),
    'pushnew-test': (
        "(let ((l '((a 1)))) (pushnew '(a 1) l :test #'equal) (pushnew '(b 2) l"
        " :test #'equal) (print l))",
        '\n((B 2) (A 1)) ',
    ),
    'case-typecase': (
        '(dolist (x \'(1 a "s" 2.5 (1))) (print (typecase x (integer :int) (symb'
        'ol :sym) (string :str) (float :flt) (t :other))))\n(print (case 3 ((1 2'
        ') :low) ((3 4) :mid) (otherwise :high)))',
        '\n:INT \n:SYM \n:STR \n:FLT \n:OTHER \n:MID ',
    ),
    'do-loops': (
        '(print (do ((i 0 (1+ i)) (acc nil (cons i acc))) ((= i 4) acc)))\n(doti'
        'mes (i 3) (princ i))\n(terpri)',
        '\n(3 2 1 0) 012\n',
    ),
    'loop-clauses': (
        "(print (loop for x in '(1 2 3 4 5) when (oddp x) collect x into odds e"
        'lse sum x into evens finally (return (list odds evens))))\n(print (loop'
        " for i from 10 downto 1 by 3 collect i))\n(print (loop for (a b) in '(("
        '1 2) (3 4)) sum (* a b)))',
        '\n((1 3 5) 6) \n(10 7 4 1) \n14 ',
    ),
    'loop-misc': (
        '(print (loop repeat 3 for x = 1 then (* x 2) collect x))\n(print (loop '
        'for x across #(3 1 4) maximize x))\n(print (loop for c across "abc" cou'
        'nt (char= c #\\b)))\n(print (loop for i below 5 while (< i 3) collect i)'
        ')',
        '\n(1 2 4) \n4 \n1 \n(0 1 2) ',
    ),
    'loop-hash': (
        "(let ((h (make-hash-table))) (setf (gethash 1 h) 'one (gethash 2 h) 't"
        'wo) (print (loop for k being the hash-keys of h using (hash-value v) c'
        'ollect (cons k v))))',
        '\n((1 . ONE) (2 . TWO)) ',
    ),
    'handler-case': (
        '(print (handler-case (error "oops ~d" 3) (error (c) (format nil "got: '
        '~a" c))))\n(print (handler-case 5 (:no-error (x) (* x 2))))',
        '\n"got: oops 3" \n10 ',
    ),
    'format-misc': (
        '(format t "~5d|~5@a|~:d|~8,3f|~e~%" 42 "ab" 1234567 3.14159 1234.5)\n(f'
        'ormat t "~{~a~^-~}|~:[no~;yes~]|~@(hello there~)~%" \'(1 2 3) t)\n(forma'
        't t "~r ~:r ~@r~%" 42 3 14)',
        '   42|   ab|1,234,567|   3.142|1.2345e+3\n1-2-3|yes|Hello there\nforty-t'
        'wo third XIV\n',
    ),
    'printer-floats': (
        '(print (list 1.0 0.5 1e-4 1e7 123456.7 (/ 1.0 3) 2.5d0 1d-5 (float 1/3'
        ' 1d0) (sqrt 2.0) -0.0))',
        '\n(1.0 0.5 1.0e-4 1.0e7 123456.7 0.33333334 2.5d0 1.0d-5 0.333333333333'
        '3333d0\n 1.4142135 -0.0) ',
    ),
    'printer-misc': (
        '(print (list "s" #\\a #\\Space \'sym :kw \'|Mixed| 1/2 (cons 1 2) #(1 "x")'
        '))\n(princ (list "s" #\\a \'sym :kw))\n(prin1 "q\\"")',
        '\n("s" #\\a #\\  SYM :KW |Mixed| 1/2 (1 . 2) #(1 "x")) (s a SYM KW)"q\\""',
    ),
    'numbers': (
        '(print (list (expt 2 100) (/ 6 4) (* 1.5 2) (+ 1/2 0.5d0) (floor 7.5) '
        '(mod -7 3) (rem -7 3) (gcd 12 18) (ash 1 10) (max 1 2.0) (isqrt 17)))',
        '\n(1267650600228229401496703205376 3/2 3.0 1.0d0 7 2 -1 6 1024 2.0 4) ',
    ),
    'strings': (
        '(print (list (string-upcase "abc") (subseq "hello" 1 3) (concatenate \''
        'string "a" "b") (string= "a" "a") (search "lo" "hello") (string-trim "'
        ' " "  x  ") (char "abc" 1) (parse-integer "42")))',
        '\n("ABC" "el" "ab" T 3 "x" #\\b 42) ',
    ),
    'sequences': (
        "(print (list (remove 3 '(1 3 2 3)) (find-if #'evenp '(1 3 4 5)) (posit"
        'ion #\\c "abcd") (count 1 \'(1 2 1)) (reverse #(1 2 3)) (sort (list 3 1 '
        "2) #'>) (reduce #'max '(3 9 2)) (remove-duplicates '(1 2 1 3)) (mapcar"
        ' #\'+ \'(1 2) \'(10 20)) (member 2 \'(1 2 3)) (assoc "b" \'(("a" . 1) ("b" '
        ". 2)) :test #'string=)))",
        '\n((1 2) 4 2 2 #(3 2 1) (3 2 1) 9 (2 1 3) (11 22) (2 3) ("b" . 2)) ',
    ),
    'hash-tables': (
        "(let ((h (make-hash-table :test 'equal))) (setf (gethash '(1 2) h) :li"
        'st (gethash "k" h) :str) (print (list (gethash \'(1 2) h) (gethash "k" '
        "h) (hash-table-count h) (multiple-value-list (gethash 'none h)))))",
        '\n(:LIST :STR 2 (NIL NIL)) ',
    ),
    'blocks-tags': (
        "(print (block outer (dolist (x '(1 2 3)) (when (= x 2) (return-from ou"
        "ter (* x 100))))))\n(print (catch 'done (throw 'done :thrown)))\n(let (("
        'n 0)) (tagbody top (incf n) (when (< n 3) (go top))) (print n))',
        '\n200 \n:THROWN \n3 ',
    ),
    'flet-labels': (
        '(print (flet ((sq (x) (* x x))) (sq 7)))\n(print (labels ((fib (n) (if '
        '(< n 2) n (+ (fib (- n 1)) (fib (- n 2)))))) (fib 15)))',
        '\n49 \n610 ',
    ),
    'unwind-protect': (
        '(print (catch \'x (unwind-protect (throw \'x 1) (princ "cleanup "))))',
        'cleanup \n1 ',
    ),
    'dynamic-binding': (
        '(defvar *depth* 0)\n(defun show () *depth*)\n(print (let ((*depth* 5)) ('
        'show)))\n(print (show))',
        '\n5 \n0 ',
    ),
    'struct': (
        '(defstruct point (x 0) (y 0))\n(let ((p (make-point :x 3))) (incf (poin'
        't-y p) 4) (print (list (point-x p) (point-y p) (point-p p))))',
        '\n(3 4 T) ',
    ),
    'chars': (
        '(print (list (char-upcase #\\a) (char-code #\\A) (code-char 98) (digit-c'
        'har-p #\\7) (alpha-char-p #\\1) (char< #\\a #\\b)))',
        '\n(#\\A 65 #\\b 7 NIL T) ',
    ),
    'apply-funcall': (
        "(print (apply #'+ 1 2 '(3 4)))\n(print (funcall (complement #'evenp) 3)"
        ")\n(print (mapcar (constantly 7) '(1 2)))",
        '\n10 \nT \n(7 7) ',
    ),
    'with-output-to-string': (
        '(print (with-output-to-string (s) (princ "a" s) (format s "~a" 1) (wri'
        'te-string "z" s)))',
        '\n"a1z" ',
    ),
    'once-only-prelude': (
        '(defmacro sq (x) (once-only (x) `(* ,x ,x)))\n(let ((n 0)) (print (sq ('
        'incf n))) (print n))',
        '\n1 \n1 ',
    ),
    'with-gensyms-prelude': (
        '(defmacro my-swap (a b) (with-gensyms (tmp) `(let ((,tmp ,a)) (setf ,a'
        ' ,b ,b ,tmp))))\n(let ((p 1) (q 2)) (my-swap p q) (print (list p q)))',
        '\n(2 1) ',
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_program_prints_like_sbcl(name: str) -> None:
    text, expected = CASES[name]
    assert run_program(text, f"{name}.sx") == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        # SBCL prints some code forms with mandatory breaks, and expands its own macros so
        ("(print (macroexpand-1 '(when a b c)))", "\n(IF A\n    (PROGN B C)) "),
        ("(print (macroexpand-1 '(incf x 2)))", "\n(SETQ X (+ 2 X)) "),
        ("(print (macroexpand-1 '(cond (a 1) (t 2))))", "\n(IF A\n    1\n    (THE T 2)) "),
        ("(print '(let ((a 1) (b 2)) (print a) b))", "\n(LET ((A 1) (B 2))\n  (PRINT A)\n  B) "),
        ("(print '(flet ((f (x) x)) (f 1)))", "\n(FLET ((F (X)\n         X))\n  (F 1)) "),
        ("(print '(setq a 1 b 2))", "\n(SETQ A 1\n      B 2) "),
        ("(print (cons 'list (loop for i below 30 collect i)))",
         "\n(LIST 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27\n"
         "      28 29) "),
        ("(print (loop for i below 40 collect i))",
         "\n(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28\n"
         " 29 30 31 32 33 34 35 36 37 38 39) "),
    ],
)
def test_pretty_printing_like_sbcl(text: str, expected: str) -> None:
    assert run_program(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        # outputs from sbcl --script
        ("(print (loop for x in '(1 2 3) and y = 0 then x collect (list x y)))",
         "\n((1 0) (2 1) (3 2)) "),
        ("(print (loop for x in '(1 nil 3 nil) when x collect it))", "\n(1 3) "),
        ("(print (loop for x in nil sum x))", "\n0 "),
        ("(print (merge 'list (list 1 3 5) (list 2 4) #'<))", "\n(1 2 3 4 5) "),
        ("(print (list (eql 0.0 -0.0) (= 0.0 -0.0) (max 1/2 0.3)))", "\n(NIL T 1/2) "),
        ("(print (list (intersection '(1 2 3) '(2 3 4)) (set-difference '(1 2 3) '(2))))",
         "\n((3 2) (3 1)) "),
        ("(let ((fns '())) (dolist (x '(a b c)) (push (lambda () x) fns))"
         " (print (mapcar #'funcall fns)))", "\n(C B A) "),
        ("(defun reader-fn () *local*)\n(let ((*local* 'dynamic))\n"
         "  (declare (special *local*))\n  (print (reader-fn)))", "\nDYNAMIC "),
        ('(format t "~8,3,,,\'#f|~3,2a|~%" 1.5 3)', "###1.500|3  |\n"),
        ("(print (list (char-upcase #\\a) (string-upcase \"stra\u00dfe\")))",
         '\n(#\\A "STRA\u00dfE") '),
    ],
)
def test_more_programs_like_sbcl(text: str, expected: str) -> None:
    assert run_program(text) == expected
