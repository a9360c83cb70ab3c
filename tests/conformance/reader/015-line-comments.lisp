; a comment at the top
(print 1) ; trailing comment
;; another
(print ; in the middle
  2)
;;; (print 99)
(print '(a ; hidden
         b))
(terpri)
