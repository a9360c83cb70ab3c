(print (loop for x in '(1 2 3 4 5 6)
             sum x into total
             count (evenp x) into evens
             maximize x into big
             finally (return (list total evens big))))
(terpri)
