(print (handler-case (error "boom")
         (error () 'caught)))
(print (handler-case 'no-error
         (error () 'caught)))
(print (handler-case (progn (error "x") 'unreached)
         (error (c) (declare (ignore c)) 'caught-with-var)))
(terpri)
