;; compile and coerce turn a lambda expression or a name into a function
(print (funcall (coerce '(lambda (x) (* x 2)) 'function) 4))
(print (funcall (compile nil '(lambda (x) (1+ x))) 1))
(print (multiple-value-list (compile 'twice '(lambda (x) (* 2 x)))))
(print (twice 21))
(print (funcall (coerce 'car 'function) '(a b)))
(defun helper (x) (list :helped x))
(print (list (compile 'helper) (helper 1)))
(print (mapcar (compile nil (lambda (x) (* x x))) '(1 2 3)))
