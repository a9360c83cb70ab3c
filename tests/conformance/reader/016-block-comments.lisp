#| a block comment |#
(print 1)
#| outer #| nested |# still outer (print 99) |#
(print 2)
(print '(a #| inline |# b))
#|
multi
line
|#
(print 3)
(terpri)
