(print (loop for x in '(1 2 3) collect (* x x)))
(print (loop for x in '() collect x))
(print (loop for x in '(a b c) collect (list x)))
(print (loop for x in '(1 2 3)
             collect x
             collect (- x)))
(terpri)
