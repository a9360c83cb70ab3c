(print
   (+
	1
	2))
(print '(  spaced    out   list  ))
(print '(a
b
c))
(terpri)
