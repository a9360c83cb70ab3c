;; ~G chooses ~F (then four spaces) or ~E by the number's magnitude; write and
;; write-to-string take :case; rationalize finds the simplest rational
(print (list (format nil "~g" 1.5) (format nil "~g" 1e10) (format nil "~g" 123.456)
             (format nil "~g" 0.001) (format nil "~g" 0.0) (format nil "~g" 100)))
(print (list (format nil "~10,2g|" 3.14159) (format nil "~g" 1d-5) (format nil "~g" 1234567.0)
             (format nil "~g" 'a) (format nil "~g" 0.5)))
(print (list (write-to-string 42 :base 2) (write-to-string 'abc :case :downcase)
             (write-to-string '(foo-bar :k) :case :capitalize)))
(write 'abc :case :capitalize)
(terpri)
(print (list (rational 0.5) (rationalize 0.1) (rational 0.1) (rationalize 0.1d0) (rationalize 1.5)
             (rationalize -0.333333) (rationalize 3.14159) (rationalize 1d-5)))
(print (list (rationalize 100.0) (rationalize 0.0) (rationalize 1/3) (rationalize 2)
             (rationalize 0.75d0) (rationalize 2.2) (rationalize 1e10) (rationalize 123.456d0)))
