(defun ecase-test (x)
  (ecase x
    (:red 1)
    (:green 2)))
(print (ecase-test :red))
(print (ecase-test :green))
(print (handler-case (ecase-test :blue)
         (error () 'ecase-failed)))
(terpri)
