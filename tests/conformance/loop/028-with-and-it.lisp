;; with ... and ... binds in parallel; `it` names the test value in the first clause only
(print (let ((a 10)) (loop with a = 1 and b = (list a) return (list a b))))
(print (let ((a 10)) (loop with a = 1 with b = (list a) return (list a b))))
(print (let ((x 'outer))
         (loop with x = 1 and y = x return (list x y))))
(print (loop with (a b) = '(1 2) and c = 3 return (list a b c)))
(print (let ((it 'outer)) (loop for x in '(1 nil 2) when x collect it and collect it)))
(print (let ((it 'outer))
         (loop for x in '(1 2 3)
               if (evenp x) collect x
               else collect (and (oddp x) x) and collect it)))
(print (loop for x in '(1 nil 3) when x collect it))
(print (loop for x in '((a 1) (b 2)) thereis (second x)))
