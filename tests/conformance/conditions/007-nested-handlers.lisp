(print (handler-case
           (handler-case (error "inner")
             (type-error () 'inner-type))
         (error () 'outer-error)))
(print (handler-case
           (handler-case (error "inner")
             (error () (error "rethrown")))
         (error (c) (princ-to-string c))))
(terpri)
