(print (loop for x = 1 then (* x 2)
             repeat 6
             collect x))
(print (loop for i from 1 to 4
             for sq = (* i i)
             collect sq))
(terpri)
