(print (loop with acc = 1
             for i from 1 to 5
             do (setq acc (* acc i))
             finally (return acc)))
(loop for i from 1 to 3
      finally (print 'finished))
(terpri)
