;; conditions from the language carry their slots: the datum and expected type of a
;; type-error, the operation and operands of division-by-zero; a throw with no catch is
;; a control-error that handler-case sees
(print (handler-case (/ 1 0)
         (division-by-zero (c) (list (arithmetic-error-operation c) (arithmetic-error-operands c)))))
(defparameter *five* 5)
(defparameter *sym* 'a)
(print (handler-case (car *five*) (type-error (c) (list (type-error-datum c) (type-error-expected-type c)))))
(print (handler-case (+ *sym* 1) (type-error (c) (list (type-error-datum c) (type-error-expected-type c)))))
(print (handler-case (throw 'nope 1) (control-error () :control-error)))
(print (catch 'outer (handler-case (throw 'outer :thrown) (control-error () :wrong))))
(print (handler-case (catch 'a (throw 'b 1)) (control-error () :control-error)))
(print (catch 'a (catch 'b (throw 'a :from-inner))))
