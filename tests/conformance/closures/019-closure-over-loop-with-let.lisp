(let ((adders (loop for i from 1 to 3
                    collect (let ((i i)) (lambda (x) (+ x i))))))
  (print (mapcar (lambda (f) (funcall f 100)) adders)))
(let ((fns (mapcar (lambda (n) (lambda () (* n n))) '(1 2 3))))
  (print (mapcar #'funcall fns)))
(terpri)
