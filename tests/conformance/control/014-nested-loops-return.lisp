(print (dotimes (i 10)
         (dotimes (j 10)
           (when (= (* i j) 12) (return)))
         (when (= i 4) (return (list 'stopped i)))))
(print (block search
         (dolist (row '((1 2) (3 4) (5 6)))
           (dolist (x row)
             (when (> x 3) (return-from search x))))))
(terpri)
