(loop for x in '(a b c)
      for i from 0
      do (format t "~a:~a " i x))
(terpri)
(loop repeat 3 do (princ "*"))
(terpri)
