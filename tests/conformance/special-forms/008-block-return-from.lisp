(print (block outer
         (dolist (x '(1 2 3 4))
           (when (= x 3) (return-from outer (* x 100))))
         'never))
(print (block b 1 2))
(print (block b (return-from b) 99))
(print (block a (block b (return-from a 'from-a)) 'after-b))
(terpri)
