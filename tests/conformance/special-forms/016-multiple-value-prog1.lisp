(let ((x 0))
  (print (multiple-value-list
          (multiple-value-prog1 (values 1 2 3)
            (setq x 10))))
  (print x))
(print (multiple-value-list (prog1 (values 'a 'b) 'ignored)))
(terpri)
