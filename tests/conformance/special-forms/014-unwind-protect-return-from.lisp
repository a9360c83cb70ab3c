(defun f ()
  (block nil
    (unwind-protect
         (return 'early)
      (princ "cleanup ran")
      (terpri))))
(print (f))
(terpri)
