(defun num-or-str (x)
  (etypecase x
    (number (* x 2))
    (string (length x))))
(print (num-or-str 21))
(print (num-or-str "four"))
(print (handler-case (num-or-str 'sym) (type-error () 'type-error-caught)))
(terpri)
