(let ((log '()))
  (tagbody
     (mapc (lambda (x)
             (when (eq x 'stop) (go done))
             (push x log))
           '(a b stop c))
   done)
  (print (nreverse log)))
(terpri)
