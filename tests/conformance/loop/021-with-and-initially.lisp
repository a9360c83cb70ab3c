(print (loop with a = 1 and b = 2
             for i from 1 to 3
             collect (+ a b i)))
(loop initially (princ "start ")
      for i from 1 to 3
      do (princ i)
      finally (princ " end"))
(terpri)
