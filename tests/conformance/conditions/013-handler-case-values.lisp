(print (multiple-value-list (handler-case (values 1 2) (error () 'x))))
(print (multiple-value-list (handler-case (error "e") (error () (values 3 4)))))
(print (multiple-value-list
        (handler-case (floor 7 2)
          (error () 'none))))
(terpri)
