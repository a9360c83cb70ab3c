;; *print-length* and *print-level* cut what print, prin1, format and write-to-string show
(print (let ((*print-length* 2)) (format nil "~a ~s" '(1 2 3 4) #(1 2 3))))
(let ((*print-length* 3)) (print '(a b c d e)) (print '(a b)) (print '(a b c)) (print '(1 (2 3 4 5) . 6)))
(let ((*print-level* 2)) (print '(1 (2 (3 (4))))) (print '((a) b)) (print 'sym) (print #(1 #(2 #(3)))))
(let ((*print-level* 1) (*print-length* 1)) (print '((1 2) 3)))
(let ((*print-level* 0)) (print '(1)) (print 5))
(print (let ((*print-length* 0)) (prin1-to-string '(1 2))))
(print (list 1 2 3))
(print (let ((*print-length* 2)) (write-to-string '(1 2 3))))
