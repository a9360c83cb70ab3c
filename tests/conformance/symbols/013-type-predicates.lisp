(format t "~a~%" "x: number symbol string cons character")
(format t "~a~%" (list (numberp 1) (symbolp 1)))
(dolist (x (list 1 'a "s" #\c '(1) nil 1.5 #(1)))
  (format t "~s: ~a ~a ~a ~a ~a~%"
          x (numberp x) (symbolp x) (stringp x) (consp x) (characterp x)))
