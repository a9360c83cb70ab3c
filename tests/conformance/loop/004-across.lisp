(print (loop for c across "abc" collect (char-upcase c)))
(print (loop for x across #(1 2 3) sum x))
(print (loop for x across (vector) collect x))
(print (loop for x across #(3 1 2)
             for i from 0
             collect (* x i)))
(terpri)
