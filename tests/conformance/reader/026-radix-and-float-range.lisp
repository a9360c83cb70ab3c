;; #nR integers in any base; single-floats at the top of their range read and print
(print (list #36rZZ #2r1010 #3r-12 #16rff #8r777 #b-101 #o777))
(print (list 1. -1. +5 .5 -.5 1.5e3 1.5d3 1.5f3 1.5s3 1.5l3 1/2 -3/6 4/2))
(print (list 3.4028235e38 most-positive-single-float 1e38 1.17549435e-38 1d308))
(print (list (* 2 1.7e38) (- most-positive-single-float)))
(print (handler-case (* 2 most-positive-single-float) (floating-point-overflow () :overflow)))
