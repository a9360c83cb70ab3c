(print (loop for x in '(1 2 3 4 5 6)
             when (evenp x) collect x into evens
             else collect x into odds
             finally (return (list evens odds))))
(terpri)
