(defun documented (x)
  "Returns x plus one."
  (+ x 1))
(print (documented 41))
(defun only-string () "just a string")
(print (only-string))
(terpri)
