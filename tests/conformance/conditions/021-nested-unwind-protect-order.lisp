(defvar *trace* '())
(catch 'out
  (unwind-protect
       (unwind-protect
            (throw 'out nil)
         (push 'inner *trace*))
    (push 'outer *trace*)))
(print (reverse *trace*))
(print (handler-case (unwind-protect (error "e") (push 'last *trace*))
         (error () (first *trace*))))
(terpri)
