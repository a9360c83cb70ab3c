(defmacro with-logging ((label) &body body)
  `(progn
     (format t "enter ~a~%" ,label)
     (prog1 (progn ,@body)
       (format t "leave ~a~%" ,label))))
(print (with-logging ("work") (+ 1 2)))
(terpri)
