(defun compose (&rest fns)
  (if (null fns)
      #'identity
      (lambda (x) (funcall (car fns) (funcall (apply #'compose (cdr fns)) x)))))
(print (funcall (compose #'1+ #'1+ (lambda (x) (* x 10))) 5))
(print (funcall (compose) 'same))
(print (mapcar (compose #'car #'last) '((1 2) (3 4 5))))
(terpri)
