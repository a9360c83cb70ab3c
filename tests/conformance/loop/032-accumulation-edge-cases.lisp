;; maximize/minimize of nothing is 0; an accumulation may name a type; typed with-vars
(print (loop for x in '() maximize x))
(print (loop for x in '() minimize x into m finally (return m)))
(print (loop for x in '(3 -1 2) maximize x into hi minimize x into lo finally (return (list hi lo))))
(print (loop for i of-type fixnum below 3 sum i of-type fixnum))
(print (loop for x in '(1.5 2.5) sum x float))
(print (loop with n fixnum for x in '(a b c) do (incf n) finally (return n)))
(print (loop for x in '(1 2 3) count (oddp x) fixnum))
