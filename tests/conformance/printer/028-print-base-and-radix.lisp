;; *print-base* and *print-radix* change how integers and ratios print; write-to-string :base
(let ((*print-base* 16)) (print 255) (print '(10 -31 1/2)) (princ 255) (print (format nil "~a ~s ~d" 255 255 255)))
(let ((*print-base* 2) (*print-radix* t)) (print 5) (print 1/3))
(let ((*print-radix* t)) (print 10) (print 1/2) (print 1.5))
(let ((*print-base* 36) (*print-radix* t)) (print 35))
(let ((*print-base* 8)) (print (list (prin1-to-string 8) (write-to-string 8 :base 10) (format nil "~x" 255))))
