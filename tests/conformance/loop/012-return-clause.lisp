(print (loop for x in '(1 3 5 6 7) when (evenp x) return x))
(print (loop for i from 0 do (when (= i 4) (return (* i i)))))
(print (loop for x in '(1 2 3)
             when (> x 5) return 'big
             finally (return 'none)))
(print (loop for c across "hello" when (char= c #\l) return 'has-l))
(terpri)
