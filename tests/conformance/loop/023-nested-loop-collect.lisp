(print (loop for i from 1 to 3
             collect (loop for j from 1 to i collect (* i j))))
(print (loop for i from 1 to 3
             append (loop for j from i to 3 collect (list i j))))
(terpri)
