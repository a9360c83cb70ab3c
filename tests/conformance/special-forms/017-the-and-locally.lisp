(print (the integer (+ 1 2)))
(print (the fixnum 5))
(print (the (or string null) "s"))
(locally
  (declare (optimize (speed 1)))
  (print 'inside-locally))
(print (locally 1 2 3))
(terpri)
