;; formatter makes a function of a stream and arguments; format accepts it as a control
(print (funcall (formatter "~a-~a") *standard-output* 1 2 3))
(print (format nil (formatter "~a!") 3))
(print (with-output-to-string (s) (format s (formatter "<~{~a~^,~}>") '(1 2 3))))
(defparameter *f* (formatter "~d item~:p"))
(print (list (format nil *f* 1) (format nil *f* 3)))
(print (funcall (formatter "~*~a") *standard-output* 1 2))
(terpri)
