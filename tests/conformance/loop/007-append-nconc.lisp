(print (loop for x in '((1 2) (3) () (4 5)) append x))
(print (loop for x in '(1 2 3) append (list x x)))
(print (loop for x in '(1 2 3) nconc (list x (* 10 x))))
(print (loop for x in '(a b)
             collect x
             append (list 1 2)))
(terpri)
