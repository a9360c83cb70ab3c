;; format control strings that misuse directives signal an error instead of printing
(defun try (control &rest args)
  (handler-case (apply #'format nil control args)
    (error () :error)))
(defparameter *controls* '("~a" "~{~a" "~a~}" "~[a~;b" "~:@:a" "~,,,,,,,,a" "~q" "~(abc"
                           "abc~)" "~;" "~*~a" "~2:*~a" "~'" "~ab~" "~:[a~]"))
(print (mapcar (lambda (c) (try c)) *controls*))
(print (list (try "~{~a~}" 5) (try "~c" "a") (try "~r" 1.5) (try "~d" "x")))
(print (list (try "~@[~a~]" nil) (try "~[a~:;b~;c~]" 0) (try "~1{~a~}" '(1 2))
             (try "~@{~a~}" 1 2) (try "~?" "~a" '(1)) (try "~:d" 1234567)))
(print (list (try "~w" '(a "b")) (try "~i~_~a" 1) (try "~x ~b ~o" 255 5 8)))
