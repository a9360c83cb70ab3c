(print (loop named outer
             for i from 0 to 5
             do (loop for j from 0 to 5
                      do (when (= (+ i j) 7) (return-from outer (list i j))))))
(terpri)
