(let ((evens 0) (odds 0))
  (loop for i from 1 to 10
        do (if (evenp i) (incf evens) (incf odds))
           (when (= i 5) (princ "half "))
        until (= i 8))
  (print (list evens odds)))
(terpri)
