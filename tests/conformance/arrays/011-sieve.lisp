(defun sieve (n)
  (let ((composite (make-array (1+ n) :initial-element nil)))
    (loop for i from 2 to n
          unless (aref composite i)
            collect i
            and do (loop for j from (* i i) to n by i
                         do (setf (aref composite j) t)))))
(print (sieve 60))
(terpri)
