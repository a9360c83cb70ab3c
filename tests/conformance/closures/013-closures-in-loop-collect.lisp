(let ((fns (loop for i from 1 to 3
                 collect (let ((k i)) (lambda (x) (* x k))))))
  (print (mapcar (lambda (f) (funcall f 10)) fns))
  (print (funcall (second fns) 7))
  (print (length fns)))
(terpri)
