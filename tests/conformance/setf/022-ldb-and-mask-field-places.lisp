;; (ldb spec place) and (mask-field spec place) are places: setf and incf store the bits back
(print (let ((x 0)) (setf (ldb (byte 4 0) x) 15) x))
(print (let ((x #xFF)) (list (setf (ldb (byte 4 4) x) 0) x (incf (ldb (byte 4 0) x)) x)))
(print (let ((l (list 0 1))) (setf (ldb (byte 2 2) (car l)) 3) l))
(print (let ((x 0)) (setf (mask-field (byte 4 4) x) #xFF) x))
