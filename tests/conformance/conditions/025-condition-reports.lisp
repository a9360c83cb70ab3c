;; what princ shows for the conditions the language signals at run time
(defparameter *five* 5)
(defun report-of (thunk) (handler-case (funcall thunk) (error (c) (format nil "~a" c))))
(print (report-of (lambda () (car *five*))))
(print (report-of (lambda () (symbol-value (intern "UNBOUND-THING")))))
(print (report-of (lambda () (funcall (intern "NO-SUCH-FUNCTION")))))
(print (report-of (lambda () (error 'type-error :datum 1 :expected-type 'string))))
(print (report-of (lambda () (error "msg ~a" 1))))
(print (report-of (lambda () (/ *five* 0))))
