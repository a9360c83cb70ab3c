;; the implementation constants and limits, and denormal floats as SBCL prints them
(print (list array-rank-limit char-code-limit internal-time-units-per-second
             multiple-values-limit (= array-total-size-limit array-dimension-limit)))
(print (list double-float-negative-epsilon single-float-negative-epsilon short-float-epsilon
             long-float-epsilon))
(print (list least-negative-normalized-double-float least-negative-normalized-short-float
             least-positive-normalized-single-float least-negative-single-float
             least-positive-single-float))
(print (list most-negative-long-float most-positive-short-float))
(print (list 1e-38 1d-310 (/ least-positive-normalized-double-float 3) (/ 1e-38 1000)))
(print (list (eql least-positive-long-float least-positive-double-float)
             (eql most-positive-short-float most-positive-single-float)))
