(let ((cleanups 0))
  (print (dotimes (i 10)
           (unwind-protect
                (when (= i 3) (return i))
             (incf cleanups))))
  (print cleanups))
(terpri)
