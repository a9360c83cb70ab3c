(format t "~8a|~4a|~6a~%" "name" "qty" "price")
(format t "~a~%" (make-string 20 :initial-element #\-))
(dolist (row '(("apple" 3 0.5)
              ("kiwi" 12 0.25)
              ("fig" 100 1.75)))
  (format t "~8a|~4d|~6,2f~%"
          (first row) (second row) (third row)))
