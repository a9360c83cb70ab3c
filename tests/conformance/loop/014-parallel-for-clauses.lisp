(print (loop for x in '(a b c d)
             for y in '(1 2 3)
             collect (cons x y)))
(print (loop for i from 0
             for c across "xyz"
             collect (list i c)))
(terpri)
