;; loop ... of-type and simple type names in for clauses; fixnum in declarations
(print (loop for x of-type fixnum in '(1 2 3) sum x))
(print (loop for x fixnum in '(1 2) collect (* x x)))
(print (loop for i of-type (integer 0 10) from 0 below 4 collect i))
(print (loop for x float in '(1.0 2.5) sum x))
(print (let ((x 1)) (declare (fixnum x)) (+ x 1)))
(print (let ((s 0)) (declare (type fixnum s)) (dotimes (i 5 s) (declare (fixnum i)) (incf s i))))
(print (loop with total of-type fixnum = 0 for i from 1 to 3 do (incf total i) finally (return total)))
